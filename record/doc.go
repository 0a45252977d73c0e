// Package record writes a trace of the calls to a dependency, one JSON
// line per call (start, duration, outcome, error class and key), for
// package sim to replay through candidate configurations.
//
// # Quick start
//
//	f, _ := os.Create("trace.jsonl")
//	rec, _ := record.New(f, record.Config{})
//	defer rec.Close()
//	svc := rampart.NewBuilder[Req, Resp]().
//		// … the layers of the stack (see the package rampart documentation) …
//		Layer(record.NewLayer[Req, Resp](rec, nil)). // innermost: each attempt
//		Service(backend)
//
// A [Recorder] is bounded (a fixed buffer; calls that find it full are
// dropped and counted) and writes off the callers' path, so it can stay on
// in production; [Config.Sample] records one call in N.
package record
