package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"os"
	"slices"
	"testing"
)

func TestAuthorityIssuesCertificatesItsCAVerifies(t *testing.T) {
	dir := t.TempDir()
	ca, err := newAuthority(dir)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(ca.caFile())
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("ca.crt is not a PEM certificate")
	}

	serverCert, serverKey, err := ca.issue("server", pkix.Name{CommonName: "kube-apiserver"}, x509.ExtKeyUsageServerAuth,
		[]string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	server := loadLeaf(t, serverCert, serverKey)
	if _, err := server.Verify(x509.VerifyOptions{Roots: roots, DNSName: "127.0.0.1", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("serving certificate for 127.0.0.1: %v", err)
	}
	if _, err := server.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("a serving certificate verifies for client auth")
	}

	clientCert, clientKey, err := ca.issue("admin", pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}}, x509.ExtKeyUsageClientAuth, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	client := loadLeaf(t, clientCert, clientKey)
	if _, err := client.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate: %v", err)
	}
	// The API server reads the user from CN and the groups from O.
	if client.Subject.CommonName != "admin" || !slices.Equal(client.Subject.Organization, []string{"system:masters"}) {
		t.Errorf("client subject: %+v", client.Subject)
	}
	if info, err := os.Stat(clientKey); err != nil || info.Mode().Perm()&0o077 != 0 {
		t.Errorf("private key readable by others: %v %v", info.Mode(), err)
	}
}

func loadLeaf(t *testing.T, certFile, keyFile string) *x509.Certificate {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatalf("key pair %s: %v", certFile, err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf
}
