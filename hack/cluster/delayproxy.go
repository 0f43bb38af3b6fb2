package cluster

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// DelayProxy is a loopback TCP proxy in front of an address that can hold
// every answer back: a slow API server as the clients behind it see it.
// It forwards bytes (TLS passes through untouched) and delays each chunk
// from the server by the current delay, keeping their order; requests go
// through at once.
type DelayProxy struct {
	// Addr is where clients connect.
	Addr string

	target string
	ln     net.Listener
	delay  atomic.Int64
	wg     sync.WaitGroup
}

// StartDelayProxy listens on a free loopback port and forwards to target
// (host:port).
func StartDelayProxy(target string) (*DelayProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &DelayProxy{Addr: ln.Addr().String(), target: target, ln: ln}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// SetDelay holds every answer back by d from now on (0: none).
func (p *DelayProxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// Close stops accepting and waits for nothing: open connections end when
// either side closes them.
func (p *DelayProxy) Close() error { return p.ln.Close() }

func (p *DelayProxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		go func() {
			_, _ = io.Copy(server, client)
			server.Close()
		}()
		go func() {
			p.delayed(client, server)
			client.Close()
		}()
	}
}

// delayed copies from src to dst, each chunk sent its delay after it came.
func (p *DelayProxy) delayed(dst io.Writer, src io.Reader) {
	type chunk struct {
		b   []byte
		due time.Time
	}
	chunks := make(chan chunk, 1024)
	go func() {
		defer close(chunks)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				chunks <- chunk{buf[:n], time.Now().Add(time.Duration(p.delay.Load()))}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range chunks {
		time.Sleep(time.Until(c.due))
		if _, err := dst.Write(c.b); err != nil {
			for range chunks { // drain, so the reader ends
			}
			return
		}
	}
}
