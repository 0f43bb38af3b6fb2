package cluster

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// The proxy holds answers back by the delay set, keeps their bytes and
// order, and stops holding them once the delay is 0.
func TestDelayProxyHoldsAnswersBack(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				s := bufio.NewScanner(c)
				for s.Scan() {
					_, _ = c.Write([]byte("echo " + s.Text() + "\n"))
				}
			}()
		}
	}()
	p, err := StartDelayProxy(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	ask := func(q string) (string, time.Duration) {
		start := time.Now()
		if _, err := c.Write([]byte(q + "\n")); err != nil {
			t.Fatal(err)
		}
		a, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		return a, time.Since(start)
	}
	for _, step := range []struct {
		delay    time.Duration
		atLeast  time.Duration
		atMost   time.Duration
		question string
	}{
		{0, 0, 400 * time.Millisecond, "a"},
		{500 * time.Millisecond, 500 * time.Millisecond, 2 * time.Second, "b"},
		{0, 0, 400 * time.Millisecond, "c"},
	} {
		p.SetDelay(step.delay)
		a, took := ask(step.question)
		if a != "echo "+step.question+"\n" || took < step.atLeast || took > step.atMost {
			t.Errorf("delay %s: answer %q after %s, want %q within [%s, %s]", step.delay, a, took, "echo "+step.question, step.atLeast, step.atMost)
		}
	}
}
