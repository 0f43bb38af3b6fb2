package webhookcerts

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestFileSyncCopiesOnlyACompleteSecretAndEachRotation(t *testing.T) {
	ctx := context.Background()
	key := types.NamespacedName{Namespace: "lifeline-system", Name: "certs"}
	c := fake.NewClientBuilder().Build()
	dir := t.TempDir()
	f := &fileSync{reader: c, secret: key, dir: dir}
	certPath, keyPath := filepath.Join(dir, corev1.TLSCertKey), filepath.Join(dir, corev1.TLSPrivateKeyKey)

	if wrote, err := f.sync(ctx); wrote || err != nil {
		t.Fatalf("no Secret yet: wrote %v, err %v; want nothing and no error", wrote, err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	if err := c.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if wrote, err := f.sync(ctx); wrote || err != nil {
		t.Fatalf("empty Secret (the rotator has not filled it): wrote %v, err %v", wrote, err)
	}
	if _, err := os.Stat(certPath); !os.IsNotExist(err) {
		t.Fatalf("a certificate was written from an empty Secret: %v", err)
	}

	secret.Data = map[string][]byte{corev1.TLSCertKey: []byte("cert-1"), corev1.TLSPrivateKeyKey: []byte("key-1")}
	if err := c.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if wrote, err := f.sync(ctx); !wrote || err != nil {
		t.Fatalf("filled Secret: wrote %v, err %v", wrote, err)
	}
	assertFile(t, certPath, "cert-1")
	assertFile(t, keyPath, "key-1")
	if wrote, _ := f.sync(ctx); wrote {
		t.Fatal("an unchanged Secret was copied again")
	}

	secret.Data = map[string][]byte{corev1.TLSCertKey: []byte("cert-2"), corev1.TLSPrivateKeyKey: []byte("key-2")}
	if err := c.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if wrote, err := f.sync(ctx); !wrote || err != nil {
		t.Fatalf("rotated Secret: wrote %v, err %v", wrote, err)
	}
	assertFile(t, certPath, "cert-2")
	assertFile(t, keyPath, "key-2")
}

func assertFile(t *testing.T, path, want string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil || string(got) != want {
		t.Fatalf("%s = %q (%v), want %q", path, got, err, want)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("%s mode %v (%v), want 0600: a private key readable by others", path, st.Mode().Perm(), err)
	}
}

func TestManageRefusesIncompleteOptions(t *testing.T) {
	_, err := Manage(nil, Options{Secret: types.NamespacedName{Namespace: "a", Name: "b"}, CertDir: "/tmp/x"})
	if err == nil || !strings.Contains(err.Error(), "DNS name") {
		t.Fatalf("Manage without a DNS name = %v", err)
	}
}
