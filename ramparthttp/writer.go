package ramparthttp

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
)

// responseWriter records whether the response has begun, so that a Handler
// never writes a second one. It is used by one goroutine at a time, as
// net/http requires of a ResponseWriter.
//
// From the moment the handler is called until the response starts, the
// handler's headers are kept apart from the server's: Header returns a copy
// of the server's header map, made on first use, and the copy is sent as the
// server's headers when the handler writes a status, a body byte, a flush
// or hijacks. So a refusal written after the handler gave up (a timeout)
// carries none of the headers the handler set for the answer it never wrote
// (Content-Encoding, Cache-Control, Set-Cookie), as with
// [http.TimeoutHandler], while headers set before the handler ran, by an
// outer middleware or by a layer of the stack (a request ID, CORS), stay.
// An informational status (103 Early Hints) is sent with the handler's
// headers, which are then taken back from the server's map: it does not
// start the response, and a refusal after it carries none of them either.
// The handler sees one map throughout, as with net/http: trailers it sets
// in that map after the body are copied to the server's map when it
// returns.
type responseWriter struct {
	w http.ResponseWriter
	// h is the handler's header map; nil until the handler first asks for
	// it before the response started.
	h http.Header
	// private is set when the handler is called: before that, Header is
	// the server's map.
	private bool
	// started is set once a final status or body bytes may have reached the
	// client, or the connection was hijacked.
	started bool
	// sealed is set when the stack returned an error after the response
	// began: every later write is discarded.
	sealed bool
}

// errSealed is what writes return after the response was finished.
var errSealed = errors.New("ramparthttp: response already written")

func (w *responseWriter) Header() http.Header {
	if w.h != nil {
		return w.h
	}
	if !w.private || w.started {
		return w.w.Header()
	}
	w.h = w.w.Header().Clone()
	if w.h == nil {
		w.h = http.Header{}
	}
	return w.h
}

// sendHeader makes the handler's headers the server's, before something is
// sent with them.
func (w *responseWriter) sendHeader() {
	if w.h != nil {
		replaceHeader(w.w.Header(), w.h)
	}
}

// replaceHeader makes dst hold exactly src's fields.
func replaceHeader(dst, src http.Header) {
	for k := range dst {
		if _, ok := src[k]; !ok {
			delete(dst, k)
		}
	}
	for k, v := range src {
		dst[k] = v
	}
}

// start marks the response as begun, sending the handler's headers.
func (w *responseWriter) start() {
	if !w.started {
		w.sendHeader()
		w.started = true
	}
}

func (w *responseWriter) WriteHeader(code int) {
	if w.sealed {
		return
	}
	// 101 Switching Protocols is final; every other 1xx (103 Early Hints)
	// precedes the final status and carries the headers set so far.
	if code >= 200 || code == http.StatusSwitchingProtocols {
		w.start()
		w.w.WriteHeader(code)
		return
	}
	if w.started || w.h == nil {
		w.w.WriteHeader(code)
		return
	}
	// The server sends its map with the 1xx there and then; lend it the
	// handler's headers for that, and take them back, so that a refusal
	// written if the handler never answers does not carry them.
	saved := w.w.Header().Clone()
	w.sendHeader()
	w.w.WriteHeader(code)
	replaceHeader(w.w.Header(), saved)
}

func (w *responseWriter) Write(p []byte) (int, error) {
	if w.sealed {
		return 0, errSealed
	}
	w.start()
	return w.w.Write(p)
}

// ReadFrom keeps the server's sendfile path (io.Copy into a ResponseWriter).
func (w *responseWriter) ReadFrom(src io.Reader) (int64, error) {
	if w.sealed {
		return 0, errSealed
	}
	w.start()
	return io.Copy(w.w, src)
}

// FlushError is what [http.ResponseController.Flush] calls.
func (w *responseWriter) FlushError() error {
	if w.sealed {
		return errSealed
	}
	rc := http.NewResponseController(w.w)
	if w.started || w.h == nil {
		if err := rc.Flush(); err != nil {
			return err
		}
		w.started = true
		return nil
	}
	saved := w.w.Header().Clone()
	w.sendHeader()
	if err := rc.Flush(); err != nil {
		replaceHeader(w.w.Header(), saved) // nothing was sent
		return err
	}
	w.start()
	return nil
}

func (w *responseWriter) Flush() { _ = w.FlushError() }

func (w *responseWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.sealed {
		return nil, nil, errSealed
	}
	conn, brw, err := http.NewResponseController(w.w).Hijack()
	if err == nil {
		w.start()
	}
	return conn, brw, err
}

// Unwrap lets [http.ResponseController] reach the server's writer.
func (w *responseWriter) Unwrap() http.ResponseWriter { return w.w }
