package bench_test

import (
	"testing"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/timeout"
)

// rampart's contenders, one function per scenario. Each builds its layers
// with rampart's documented defaults unless the scenario says otherwise.

func rampartClosed() []contender       { return nil }
func rampartOpen() []contender         { return nil }
func rampartRetry() []contender        { return nil }
func rampartRetryStack() []contender   { return nil }
func rampartTimeoutStack() []contender { return nil }

func rampartTimeout() []contender {
	return []contender{{name: "rampart", newLayer: func(b *testing.B) rampart.Layer[Req, Resp] {
		return must(b)(timeout.NewLayer[Req, Resp](limit))
	}}}
}

// must returns a function that returns l, or fails b if err is not nil.
func must(b *testing.B) func(l rampart.Layer[Req, Resp], err error) rampart.Layer[Req, Resp] {
	return func(l rampart.Layer[Req, Resp], err error) rampart.Layer[Req, Resp] {
		if err != nil {
			b.Fatal(err)
		}
		return l
	}
}
