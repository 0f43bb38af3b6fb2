package metricsauth

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	certutil "k8s.io/client-go/util/cert"
)

// The serving certificate is nil (the self-signed one serves) until the
// folder has a pair, then that pair, and a new one once it changes.
func TestServingCertFollowsTheFolder(t *testing.T) {
	dir := t.TempDir()
	w := &servingCert{dir: dir}
	if c, _ := w.get(nil); c != nil {
		t.Fatal("a certificate before the folder has one")
	}
	write := func(host string, at time.Time) {
		crt, key, err := certutil.GenerateSelfSignedCertKey(host, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for name, data := range map[string][]byte{"tls.crt": crt, "tls.key": key} {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, data, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(p, at, at); err != nil {
				t.Fatal(err)
			}
		}
	}
	name := func() string {
		c, err := w.get(nil)
		if err != nil || c == nil {
			t.Fatalf("no certificate: %v", err)
		}
		leaf, err := x509.ParseCertificate(c.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		cn, _, _ := strings.Cut(leaf.Subject.CommonName, "@") // certutil appends a timestamp
		return cn
	}
	now := time.Now()
	write("first.example", now)
	if got := name(); got != "first.example" {
		t.Fatalf("serving %q, want first.example", got)
	}
	write("second.example", now.Add(time.Minute))
	if got := name(); got != "second.example" {
		t.Fatalf("after a rotation serving %q, want second.example", got)
	}
}
