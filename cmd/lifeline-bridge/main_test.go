package main

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Bad configuration stops the bridge at once, before it touches a pod,
// with a message naming the field: the binary is run as a user runs it.
func TestBadConfigurationFailsFast(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "lifeline-bridge")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	closed := closedPort(t)
	for _, c := range []struct {
		name, config, want string
	}{
		{"unknown backend", "port: 80\nconsul: {address: 127.0.0.1}\n", `unknown field "consul"`},
		{"no backend", "port: 80\n", "etcd: Required value"},
		{"malformed template", "port: 80\nhttp: {register: {url: 'http://127.0.0.1/{{.IP'}, unregister: {url: 'http://127.0.0.1/x'}}\n", "http.register.url: Invalid value"},
		{"template naming no field", "port: 80\nhttp: {register: {url: 'http://127.0.0.1/{{.Nope}}'}, unregister: {url: 'http://127.0.0.1/x'}}\n", "http.register.url: Invalid value"},
		{"unreachable etcd", "port: 80\netcd: {endpoints: ['" + closed + "'], dialTimeout: 1s, requestTimeout: 1s}\n", "etcd.endpoints [" + closed + "]: cannot use the registry"},
		{"unreachable HTTP registry", "port: 80\nhttp: {register: {url: 'http://" + closed + "/register'}, unregister: {url: 'http://" + closed + "/x'}}\n", "http.register.url: cannot reach the registry"},
	} {
		t.Run(c.name, func(t *testing.T) {
			config := filepath.Join(t.TempDir(), "bridge.yaml")
			if err := os.WriteFile(config, []byte(c.config), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, "--config="+config, "--kubeconfig=/nonexistent", "--metrics-bind-address=0", "--health-probe-bind-address=0")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			start := time.Now()
			err := cmd.Run()
			if err == nil {
				t.Fatal("the bridge started")
			}
			if took := time.Since(start); took > 20*time.Second {
				t.Errorf("took %v to fail", took)
			}
			if !strings.Contains(stderr.String(), c.want) {
				t.Errorf("stderr does not say %q:\n%s", c.want, stderr.String())
			}
		})
	}
}

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
