package rampartgrpc

import (
	"context"
	"io"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/rampart-go/rampart"
	"github.com/rampart-go/rampart/circuitbreaker"
	"github.com/rampart-go/rampart/concurrency"
	"github.com/rampart-go/rampart/timeout"
)

// streamCall is the opening of a stream, the request type of the stream
// stack.
type streamCall struct {
	desc     *grpc.StreamDesc
	cc       *grpc.ClientConn
	method   string
	streamer grpc.Streamer
	opts     []grpc.CallOption
}

// NewStreamClientInterceptor returns a [grpc.StreamClientInterceptor] with
// the stack cfg describes (see [ClientConfig]), for streaming calls;
// install it with [grpc.WithStreamInterceptor] or
// [grpc.WithChainStreamInterceptor]. A bad cfg is an error naming the
// field. It is safe for concurrent use. Streams differ from unary calls in
// three ways:
//
//   - The breaker judges a stream by its final status, the error
//     RecvMsg returns at its end (io.EOF is a success), with
//     cfg.Classify. Its permit is taken when the stream is opened and held
//     until then. A stream whose caller cancels its context before
//     reading the final status is ignored, as a cancelled unary call is;
//     one whose caller's deadline passes first is a failure. A stream the
//     caller abandons without either (which leaks it in grpc-go too) holds
//     a HalfOpen probe slot no longer than the breaker's ProbeLease. The
//     interceptor starts no goroutine: its only watch on the caller's
//     context is a [context.AfterFunc], stopped when the stream is judged.
//   - Retries happen only before the call is committed, as gRFC A6
//     defines it: once the server's response headers arrive, the stream is
//     never retried. Before that, a stream of a method safe to repeat is
//     retried in two cases. When grpc-go fails to open it (UNAVAILABLE
//     while no connection is ready, say). And when the caller has sent
//     every message (CloseSend, which generated server-streaming methods
//     call at once) and its first RecvMsg finds the stream ended before any
//     response header (a server interceptor's refusal, say): the stream is
//     opened again and the messages it sent (kept until then, up to 64;
//     a stream that sends more is not retried once open) are sent again,
//     after the backoff or the server's pushback. Each of the two is
//     bounded by RetryConfig.MaxAttempts and the budget, which the call
//     deposits into once. A stream whose caller calls Header before its
//     first RecvMsg, or receives while still sending, is not retried once
//     open: it would mix two attempts. For those, use grpc-go's own
//     retryPolicy (see the package documentation).
//   - cfg.AttemptTimeout bounds only the opening of a stream: it never
//     ends a stream once open, however long it lasts.
//   - A stream takes its slot of cfg.Limit when it is opened, before it
//     asks the breaker, and holds it until its end, told as the breaker
//     is told: RecvMsg's final status (io.EOF or an error, or the one
//     response of a method whose server sends one), or the caller's
//     context ending, whichever comes first; a non-nil error other than
//     io.EOF from SendMsg or Header, which ends a grpc-go stream, gives
//     the slot back too. A stream the caller abandons without any of
//     these holds its slot as long as grpc-go holds the stream (until its
//     context ends): cancel the context of a stream you stop reading.
//     Each opening retried takes a slot of its own.
//
// Hedging does not apply to streams.
func NewStreamClientInterceptor(cfg ClientConfig) (grpc.StreamClientInterceptor, error) {
	c, err := newClient(cfg)
	if err != nil {
		return nil, err
	}
	repeat := c.streamRetry.Wrap(streamOpener{c})
	once := streamOpener{c}
	commit := c.commitRetry.Wrap(committer{streamOpener{c}})
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		if c.skip != nil && c.skip(method) {
			return streamer(ctx, desc, cc, method, opts...)
		}
		s := streamCall{desc: desc, cc: cc, method: method, streamer: streamer, opts: opts}
		var (
			cs  grpc.ClientStream
			err error
		)
		if c.methods != nil && c.methods(method) {
			if cs, err = repeat.Call(ctx, s); err == nil {
				cs = &replayStream{ClientStream: cs, ctx: ctx, call: s, retry: commit, replay: true}
			}
		} else {
			c.budget.Deposit()
			cs, err = once.Call(ctx, s)
		}
		if err != nil {
			return nil, statusOf(err)
		}
		return cs, nil
	}, nil
}

// breakerFor returns the breaker that guards a call to method over cc, or
// nil.
func (c *client) breakerFor(method string, cc *grpc.ClientConn) *circuitbreaker.Breaker {
	if c.breakers != nil {
		return c.breakers.Breaker(c.breakerKey(method, cc))
	}
	return c.breaker
}

// streamOpener opens one stream: it asks the breaker, opens the stream
// within the attempt timeout, and hands the permit to the stream.
type streamOpener struct{ c *client }

func (o streamOpener) Call(ctx context.Context, s streamCall) (grpc.ClientStream, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var release func()
	if o.c.limit != nil {
		var err error
		if release, err = concurrency.Acquire(ctx, *o.c.limit); err != nil {
			return nil, err
		}
	}
	br := o.c.breakerFor(s.method, s.cc)
	if br == nil && release == nil {
		return o.c.open(ctx, s)
	}
	j := &judgedStream{ctx: ctx, classify: o.c.classify, judged: br != nil, release: release, oneResponse: s.desc == nil || !s.desc.ServerStreams}
	if br != nil {
		var err error
		if j.p, err = br.TryAcquire(); err != nil {
			j.giveBack()
			return nil, err
		}
	}
	normal := false
	defer func() {
		if !normal {
			j.giveBack()
			if j.judged {
				j.p.Failure(circuitbreaker.ErrPanicked)
			}
		}
	}()
	cs, err := o.c.open(ctx, s)
	normal = true
	if err != nil {
		j.finish(err)
		return nil, err
	}
	j.ClientStream = cs
	j.stop = context.AfterFunc(ctx, func() { j.finish(ctx.Err()) })
	return j, nil
}

// open opens a stream, within the attempt timeout if there is one. The
// timeout's context must not end the stream once it is open, so it is not
// a deadline: a timer cancels the opening if it has not returned in time,
// and is stopped once it has.
func (c *client) open(ctx context.Context, s streamCall) (grpc.ClientStream, error) {
	ctx = outgoing(ctx, rampart.CriticalityOf(ctx))
	if c.attemptTimeout <= 0 {
		return s.streamer(ctx, s.desc, s.cc, s.method, s.opts...)
	}
	octx, cancel := context.WithCancel(ctx)
	t := time.AfterFunc(c.attemptTimeout, cancel)
	cs, err := s.streamer(octx, s.desc, s.cc, s.method, s.opts...)
	if !t.Stop() && ctx.Err() == nil {
		// The timer fired: whatever the opening returned, the stream ends.
		cancel()
		return nil, &refusedError{code: codes.DeadlineExceeded, err: &timeout.Error{After: c.attemptTimeout, Err: err}}
	}
	if err != nil {
		cancel()
		return nil, err
	}
	// grpc-go cancels the stream's own context when the stream ends, by
	// whatever means; octx follows it then.
	context.AfterFunc(cs.Context(), cancel)
	return cs, nil
}

// judgedStream finishes its stream's breaker permit with the stream's final
// status, and gives back its slot of the limit at the stream's end.
type judgedStream struct {
	grpc.ClientStream
	ctx      context.Context // the caller's, to tell its cancellation apart
	classify func(error) rampart.Outcome
	judged   bool // p is a breaker's permit
	p        circuitbreaker.Permit
	release  func()      // gives back the limit's slot (once); nil without a limit
	stop     func() bool // stops the watch on ctx
	done     atomic.Bool // the stream has ended; RecvMsg and the watch may race
	// oneResponse is set for a call whose server sends one message, which
	// ends it.
	oneResponse bool
}

// RecvMsg receives a message; at the end of the stream, it judges the
// stream by its final status.
func (j *judgedStream) RecvMsg(m any) error {
	err := j.ClientStream.RecvMsg(m)
	switch {
	case err == io.EOF:
		j.judge(nil)
	case err != nil:
		j.judge(err)
	case j.oneResponse:
		// grpc-go has read the final status with the one response.
		j.judge(nil)
	}
	return err
}

// judge finishes the permit with the stream's final status, on the
// caller's goroutine, and stops the watch on the caller's context.
func (j *judgedStream) judge(err error) {
	j.stop()
	j.finish(err)
}

// SendMsg sends a message; an error other than io.EOF ends the stream
// (io.EOF says that RecvMsg will tell how it ended), so the slot goes back.
func (j *judgedStream) SendMsg(m any) error {
	err := j.ClientStream.SendMsg(m)
	if err != nil && err != io.EOF {
		j.giveBack()
	}
	return err
}

// Header returns the response headers; an error ends the stream, so the
// slot goes back.
func (j *judgedStream) Header() (metadata.MD, error) {
	md, err := j.ClientStream.Header()
	if err != nil {
		j.giveBack()
	}
	return md, err
}

// finish ends the stream once, whoever comes first: it finishes the
// permit and gives back the slot.
func (j *judgedStream) finish(err error) {
	if j.done.CompareAndSwap(false, true) {
		defer j.giveBack()
		if j.judged {
			finish(&j.p, j.ctx, err, j.classify)
		}
	}
}

// giveBack gives back the stream's slot of the limit, if it has one; only
// the first call does.
func (j *judgedStream) giveBack() {
	if j.release != nil {
		j.release()
	}
}

// finish records the outcome of a call made with ctx that ended with err:
// ignored when the caller cancelled ctx, otherwise as classify judges it,
// with a failure given to the breaker's IsFailure.
func finish(p *circuitbreaker.Permit, ctx context.Context, err error, classify func(error) rampart.Outcome) {
	if err != nil && circuitbreaker.ClassifyContext(ctx, err) == rampart.Ignored {
		p.Ignore()
		return
	}
	// A panic in classify is a failure, as one in the call is; it
	// continues with its stack (never recovered).
	normal := false
	defer func() {
		if !normal {
			p.Failure(circuitbreaker.ErrPanicked)
		}
	}()
	o := classify(err)
	normal = true
	switch o {
	case rampart.Success:
		p.Success()
	case rampart.Ignored:
		p.Ignore()
	default:
		if err == nil {
			p.Failure(circuitbreaker.ErrBadResponse)
			return
		}
		p.DoneContext(ctx, err)
	}
}
