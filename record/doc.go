// Package record writes a trace of the calls to a dependency, one JSON
// line per attempt (start, duration, outcome, error class, key, attempt
// number), for package sim to replay through candidate configurations.
//
// # Quick start
//
//	f, _ := os.Create("trace.jsonl")
//	rec, _ := record.New(f, record.Config{})
//	defer rec.Close()
//	svc := rampart.NewBuilder[Req, Resp]().
//		Layer(retryLayer).
//		Layer(record.NewLayer(record.LayerConfig[Req, Resp]{
//			Recorder: rec,
//			Classify: classify, // the breaker's classifier
//		})).
//		Layer(circuitbreaker.NewLayer[Req, Resp](br, classify)).
//		Service(backend)
//
// Over HTTP and gRPC, set the Recorder field of ramparthttp.Config or
// rampartgrpc.ClientConfig instead: they record each attempt judged as
// their breakers judge it (a 503 is a failure).
//
// # What a trace knows
//
// A trace holds what the dependency did with each attempt sent to it,
// judged by the classifier the layer was given. It cannot hold what the
// dependency would have done with a call the live breaker refused: such
// a call is recorded as [Refused], so that a replay knows its outcome is
// unknown instead of never seeing the call. A retry is recorded as its
// own entry with its attempt number, so that a replay can tell the
// callers' requests from the live retry layer's attempts.
//
// A [Recorder] is bounded (a fixed buffer; calls that find it full are
// dropped and counted) and writes off the callers' path, so it can stay on
// in production; [Config.Sample] records one call in N.
package record
