// Package redistest starts a real redis-server for a test: one per call,
// on 127.0.0.1 at a free port, without persistence, stopped by its PID
// when the test ends. It also injects the faults the tests need: a paused
// server (SIGSTOP), a killed and restarted one on the same port, and
// dropped pub/sub connections.
//
// A missing redis-server fails the test when the environment variable CI
// is set (CI must not skip these tests) and skips it otherwise, saying how
// to install it.
package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a redis-server started for one test.
type Server struct {
	t    testing.TB
	bin  string
	Addr string // host:port

	args []string // extra redis-server arguments (a cluster node's)
	conf string   // a config file, the first argument (a Sentinel's)
	dir  string   // the server's working directory: its dump.rdb lands here, never in the checkout

	mu   sync.Mutex
	cmd  *exec.Cmd // guarded by mu
	dead bool      // killed and not restarted; guarded by mu
}

// Binary returns the path of redis-server, or fails (CI) or skips the test.
func Binary(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err == nil {
		return bin
	}
	const hint = "redis-server is not on PATH; install it with: apt-get install -y --no-install-recommends redis-server"
	if os.Getenv("CI") != "" {
		t.Fatal(hint + " (CI is set: these tests must not be skipped)")
	}
	t.Skip(hint)
	return ""
}

// Start starts a redis-server for t and stops it when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	return startWith(t, nil)
}

// startWith starts a redis-server for t, configured by set (nil: as
// Start does), and stops it when t ends.
func startWith(t testing.TB, set func(*Server)) *Server {
	t.Helper()
	s := &Server{t: t, bin: Binary(t), dir: t.TempDir()}
	if set != nil {
		set(s)
	}
	var err error
	for range 5 { // a free port may be taken between asking and binding
		s.Addr = freeAddr(t)
		if err = s.start(); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(s.stop)
	return s
}

func freeAddr(t testing.TB) string {
	addr, err := free()
	if err != nil {
		t.Fatalf("redistest: no free port: %v", err)
	}
	return addr
}

func free() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// Run starts a redis-server outside a test (for runnable examples) and
// returns its address and a function that stops it.
func Run() (addr string, stop func(), err error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		return "", nil, err
	}
	s := &Server{bin: bin, dir: dir}
	if s.Addr, err = free(); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	if err := s.start(); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return s.Addr, func() { s.stop(); os.RemoveAll(dir) }, nil
}

// start runs redis-server on s.Addr and waits until it answers PING.
func (s *Server) start() error {
	_, port, _ := net.SplitHostPort(s.Addr)
	args := append([]string{"--port", port, "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning"}, s.args...)
	if s.conf != "" {
		args = append([]string{s.conf}, args...)
	}
	cmd := exec.Command(s.bin, args...)
	cmd.Dir = s.dir
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting redis-server: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case err := <-exited:
			return fmt.Errorf("redis-server on %s exited: %v", s.Addr, err)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("redis-server on %s did not answer PING: %v", s.Addr, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.mu.Lock()
	s.cmd, s.dead = cmd, false
	s.mu.Unlock()
	go func() { <-exited }() // reap
	return nil
}

// Dead reports whether the server was killed and not restarted.
func (s *Server) Dead() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dead
}

// PID returns the server process's id.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd.Process.Pid
}

func (s *Server) signal(sig syscall.Signal) {
	s.t.Helper()
	if err := syscall.Kill(s.PID(), sig); err != nil {
		s.t.Fatalf("redistest: kill -%v %d: %v", sig, s.PID(), err)
	}
}

// Pause stops the server with SIGSTOP: connections stay open, nothing is
// answered. Resume undoes it.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume continues a paused server with SIGCONT.
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

// Kill kills the server (SIGKILL) and waits until its port refuses
// connections. Everything it held is lost.
func (s *Server) Kill() {
	s.t.Helper()
	s.mu.Lock()
	cmd := s.cmd
	s.dead = true
	s.mu.Unlock()
	_ = syscall.Kill(cmd.Process.Pid, syscall.SIGCONT)
	_ = cmd.Process.Kill()
	for range 1000 {
		c, err := net.DialTimeout("tcp", s.Addr, 50*time.Millisecond)
		if err != nil {
			return
		}
		c.Close()
		time.Sleep(5 * time.Millisecond)
	}
	s.t.Fatalf("redistest: %s still accepts connections after kill", s.Addr)
}

// Restart starts a new, empty server on the same port after Kill.
func (s *Server) Restart() {
	s.t.Helper()
	if err := s.start(); err != nil {
		s.t.Fatalf("redistest: restart: %v", err)
	}
}

// KillPubSub closes every pub/sub connection (CLIENT KILL TYPE pubsub): the
// messages published until the clients resubscribe are lost to them.
func (s *Server) KillPubSub() int64 {
	s.t.Helper()
	c := s.Client()
	defer c.Close()
	n, err := c.ClientKillByFilter(context.Background(), "TYPE", "pubsub").Result()
	if err != nil {
		s.t.Fatalf("redistest: CLIENT KILL TYPE pubsub: %v", err)
	}
	return n
}

// Options returns client options for the server with the short, context-
// respecting timeouts the package requires.
func (s *Server) Options() *redis.Options {
	return &redis.Options{
		Addr:                  s.Addr,
		ContextTimeoutEnabled: true,
		DialTimeout:           200 * time.Millisecond,
		ReadTimeout:           200 * time.Millisecond,
		WriteTimeout:          200 * time.Millisecond,
		MaxRetries:            -1,
	}
}

// Client returns a new client for the server, closed when the test ends.
func (s *Server) Client() *redis.Client {
	c := redis.NewClient(s.Options())
	s.t.Cleanup(func() { c.Close() })
	return c
}

// stop kills the server by its PID (continuing it first if paused).
func (s *Server) stop() {
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(cmd.Process.Pid, syscall.SIGCONT)
	_ = cmd.Process.Kill()
}

// Port returns the server's port.
func (s *Server) Port() int {
	_, p, _ := net.SplitHostPort(s.Addr)
	n, _ := strconv.Atoi(p)
	return n
}
