package bridge

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/util/wait"
	certutil "k8s.io/client-go/util/cert"

	"github.com/lifeline-k8s/lifeline/hack/binaries"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

// The bridge reaches an etcd that serves TLS only and authenticates its
// users, with the CA and the user's name and password read from files
// (a mounted Secret); without the user it is refused, and a config naming
// a file that is not there fails at load with the field.
func TestEtcdRegistryOverTLSWithAuthentication(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	endpoint, ca := startTLSEtcd(t, dir)
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg := etcdConfig(endpoint)
	cfg.TLS = &EtcdTLS{CAFile: ca}
	enableAuth(t, cfg, "bridge", "s3cret")

	if _, err := NewEtcd(ctx, cfg, logr.Discard()); err == nil {
		t.Fatal("a bridge without a user was let in by an etcd that authenticates")
	}
	cfg.UsernameFile, cfg.PasswordFile = write("user", "bridge\n"), write("password", "s3cret\n")
	e, err := NewEtcd(ctx, cfg, logr.Discard())
	if err != nil {
		t.Fatalf("over TLS with the user: %v", err)
	}
	defer e.Close()
	inst := Instance{IP: "10.0.0.7", Port: 8080, Pod: "web-abcde", Namespace: "demo", Workload: "web", UID: "uid-1"}
	if err := e.Register(ctx, inst); err != nil {
		t.Fatal(err)
	}
	if entries, err := e.Entries(ctx); err != nil || len(entries) != 1 {
		t.Fatalf("entries %+v (%v), want the one registered", entries, err)
	}

	c := &Config{Name: "x", Port: 80, Etcd: &cfg}
	c.Default()
	c.Etcd.PasswordFile = filepath.Join(dir, "missing")
	c.Etcd.Endpoints = append(c.Etcd.Endpoints, "http://127.0.0.1:1")
	errs := c.Validate().ToAggregate().Error()
	for _, want := range []string{"etcd.passwordFile", "etcd.endpoints[1]"} {
		if !strings.Contains(errs, want) {
			t.Errorf("validation %q does not name %s", errs, want)
		}
	}
}

// startTLSEtcd runs the pinned etcd serving https only, with a certificate
// from a CA of the test's; it returns the endpoint and the CA's file.
func startTLSEtcd(t *testing.T, dir string) (string, string) {
	t.Helper()
	bin, err := binaries.Binary(context.Background(), "etcd", os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	ports, err := cluster.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "etcd.crt"), filepath.Join(dir, "etcd.key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	args := cluster.EtcdArgs("tls", filepath.Join(dir, "data"), ports[0], ports[1])
	endpoint := fmt.Sprintf("https://127.0.0.1:%d", ports[0])
	for i, a := range args {
		if strings.HasPrefix(a, "--listen-client-urls=") || strings.HasPrefix(a, "--advertise-client-urls=") {
			args[i] = strings.SplitN(a, "=", 2)[0] + "=" + endpoint
		}
	}
	cmd := exec.Command(bin, append(args, "--cert-file="+certFile, "--key-file="+keyFile)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	err = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		resp, err := hc.Get(endpoint + cluster.EtcdHealth)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("etcd over TLS did not answer: %v", err)
	}
	return endpoint, certFile
}

// enableAuth adds root and user (read-write on everything) and turns
// etcd's authentication on.
func enableAuth(t *testing.T, cfg EtcdConfig, user, password string) {
	t.Helper()
	ctx := context.Background()
	ccfg, err := cfg.clientConfig()
	if err != nil {
		t.Fatal(err)
	}
	c, err := clientv3.New(ccfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	steps := []func() error{
		func() error { _, err := c.UserAdd(ctx, "root", "root-pw"); return err },
		func() error { _, err := c.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := c.RoleAdd(ctx, "registry"); return err },
		func() error {
			_, err := c.RoleGrantPermission(ctx, "registry", "\x00", "\x00", clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := c.UserAdd(ctx, user, password); return err },
		func() error { _, err := c.UserGrantRole(ctx, user, "registry"); return err },
		func() error { _, err := c.AuthEnable(ctx); return err },
	}
	for i, s := range steps {
		if err := s(); err != nil {
			t.Fatalf("enabling etcd's authentication, step %d: %v", i, err)
		}
	}
}
