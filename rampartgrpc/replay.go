package rampartgrpc

import (
	"context"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/observe"
	"github.com/rampart-go/rampart/retry"
)

// maxReplay is how many messages a stream keeps to send again until the
// call is committed; a stream that sends more is not retried once open.
const maxReplay = 64

// replayStream is the stream returned for a method safe to repeat. Until
// the call is committed (the server's response headers arrive), it keeps
// the messages sent, so that, when the client has finished sending
// (CloseSend) and the stream then fails before any response header, the
// stream can be opened again and the messages sent again, as gRFC A6's
// retries do.
type replayStream struct {
	grpc.ClientStream // the current attempt's; replaced only by commit

	ctx   context.Context
	call  streamCall
	retry service2 // the commit stack

	mu     sync.Mutex
	sent   []any // guarded by mu; nil once the stream cannot be replayed
	closed bool  // guarded by mu: CloseSend was called
	replay bool  // guarded by mu: sent may still be replayed

	once  sync.Once
	final error // the error commit ended the call with, if any
}

type service2 = rampart.Service[*commitCall, commitResult]

func (r *replayStream) SendMsg(m any) error {
	r.mu.Lock()
	if r.replay {
		if len(r.sent) == maxReplay {
			r.replay, r.sent = false, nil
		} else {
			r.sent = append(r.sent, m)
		}
	}
	r.mu.Unlock()
	return r.ClientStream.SendMsg(m)
}

func (r *replayStream) CloseSend() error {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	return r.ClientStream.CloseSend()
}

// Header returns the response headers. Called before the first RecvMsg,
// it ends the chance of a retry: the caller would see the headers of one
// attempt and the messages of another.
func (r *replayStream) Header() (metadata.MD, error) {
	r.once.Do(func() {
		r.mu.Lock()
		r.replay, r.sent = false, nil
		r.mu.Unlock()
	})
	return r.ClientStream.Header()
}

func (r *replayStream) RecvMsg(m any) error {
	var eof bool
	r.once.Do(func() { eof = r.commit(m) })
	if eof {
		return io.EOF
	}
	if r.final != nil {
		return r.final
	}
	return r.ClientStream.RecvMsg(m)
}

// commit waits for the call to be committed, retrying the attempts that
// fail before it, when the client has finished sending. It reports whether
// the call ended with success before any response header (a trailers-only
// OK).
func (r *replayStream) commit(m any) bool {
	r.mu.Lock()
	replay, sent := r.replay && r.closed, r.sent
	r.replay, r.sent = false, nil
	r.mu.Unlock()
	if !replay {
		return false
	}
	res, err := r.retry.Call(r.ctx, &commitCall{r: r, m: m, sent: sent, first: r.ClientStream})
	if res.cs != nil {
		r.ClientStream = res.cs
	}
	if err != nil {
		r.final = statusOf(err)
		return false
	}
	return res.eof
}

// commitCall is the request of the commit stack: one attempt waits for
// the response headers of the stream first, and every later one opens
// the stream again and sends the messages again.
type commitCall struct {
	r     *replayStream
	m     any // the caller's message, to receive the final status into
	sent  []any
	first grpc.ClientStream // the first attempt's stream, until it is used
}

// commitResult is an attempt's stream, and whether it ended with success
// before any response header.
type commitResult struct {
	cs  grpc.ClientStream
	eof bool
}

// committer runs one attempt of the commit stack.
type committer struct{ open streamOpener }

func (o committer) Call(ctx context.Context, a *commitCall) (commitResult, error) {
	cs := a.first
	a.first = nil
	if cs == nil {
		var err error
		if cs, err = o.open.Call(ctx, a.r.call); err != nil {
			return commitResult{}, err
		}
		for _, m := range a.sent {
			if err := cs.SendMsg(m); err != nil {
				break // the status comes with RecvMsg
			}
		}
		_ = cs.CloseSend()
	}
	if md, _ := cs.Header(); md != nil {
		return commitResult{cs: cs}, nil // committed
	}
	// The stream ended before any header: its status is the attempt's.
	err := cs.RecvMsg(a.m)
	if err == io.EOF {
		return commitResult{cs: cs, eof: true}, nil
	}
	return commitResult{cs: cs}, err
}

// noDeposit is a retry budget that the commit stack withdraws from without
// depositing: the call deposited once already, when it was opened.
type noDeposit struct{ b retry.Budget }

func (noDeposit) Deposit()         {}
func (n noDeposit) Withdraw() bool { return n.b.Withdraw() }

// Refund takes back a withdrawal, when the budget can.
func (n noDeposit) Refund() {
	if r, ok := n.b.(retry.Refunder); ok {
		r.Refund()
	}
}

// newCommitRetry returns the commit stack's retry layer; cfg.Budget must
// not be nil (newClient sets a default one).
func newCommitRetry(cfg RetryConfig, retryable func(error) bool) (rampart.Layer[*commitCall, commitResult], error) {
	return retry.NewLayer(retry.Config[*commitCall, commitResult]{
		MaxAttempts: cfg.MaxAttempts,
		Backoff:     cfg.Backoff,
		Budget:      noDeposit{cfg.Budget},
		MaxHint:     cfg.MaxHint,
		Retryable:   func(_ commitResult, err error) bool { return err != nil && retryable(err) },
		Hint: func(res commitResult, _ error) (time.Duration, bool) {
			if res.cs == nil {
				return 0, false
			}
			return pushback(res.cs.Trailer())
		},
		Discard:  func(commitResult) {}, // a failed attempt's stream has ended
		Name:     cfg.Name,
		Observer: committedEnds(cfg.Observer),
	})
}

// ErrCommitted is why a stream's retry loop stopped when the call was
// committed: its response headers, or its final status, reached the
// caller, so no attempt is made again. It is the Err of the loop's
// observe.RetryEnd event; callers never get it. Its RetryStop method names
// the stop "committed" for observers that label stops.
var ErrCommitted error = committedError{}

type committedError struct{}

func (committedError) Error() string {
	return "rampartgrpc: the call was committed: a response reached the caller"
}
func (committedError) RetryStop() string { return "committed" }

// committedEnds returns obs with the commit stack's loop ends that have no
// error (a committed call) told as ended by ErrCommitted, or nil.
func committedEnds(obs observe.Observer) observe.Observer {
	if obs == nil {
		return nil
	}
	return observe.Func(func(ctx context.Context, e observe.Event) {
		if e.Kind == observe.RetryEnd && e.Err == nil {
			e.Err = ErrCommitted
		}
		obs.Observe(ctx, e)
	})
}
