package cluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// authority is the cluster's certificate authority. It signs the
// apiserver's serving certificate and one client certificate per component,
// so RBAC sees each component under its own identity.
type authority struct {
	cert *x509.Certificate
	key  crypto.Signer
	dir  string
}

func newAuthority(dir string) (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	cert, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: "lifeline-dev-ca"}, key)
	if err != nil {
		return nil, err
	}
	a := &authority{cert: cert, key: key, dir: dir}
	return a, a.write("ca", cert, key)
}

func (a *authority) caFile() string { return filepath.Join(a.dir, "ca.crt") }

// issue signs a certificate and writes NAME.crt and NAME.key; it returns
// their paths.
func (a *authority) issue(name string, subject pkix.Name, usage x509.ExtKeyUsage, hosts []string, ips []net.IP) (certFile, keyFile string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return "", "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		DNSNames:     hosts,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, key.Public(), a.key)
	if err != nil {
		return "", "", err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return "", "", err
	}
	if err := a.write(name, cert, key); err != nil {
		return "", "", err
	}
	return filepath.Join(a.dir, name+".crt"), filepath.Join(a.dir, name+".key"), nil
}

func (a *authority) write(name string, cert *x509.Certificate, key crypto.Signer) error {
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return err
	}
	certPEM, err := certutil.EncodeCertificates(cert)
	if err != nil {
		return err
	}
	if err := certutil.WriteCert(filepath.Join(a.dir, name+".crt"), certPEM); err != nil {
		return err
	}
	return keyutil.WriteKey(filepath.Join(a.dir, name+".key"), keyPEM)
}

// writeServiceAccountKey writes the RSA key pair that signs service account
// tokens.
func writeServiceAccountKey(dir string) (keyFile, pubFile string, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", "", err
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return "", "", err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", "", err
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	keyFile, pubFile = filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	if err := keyutil.WriteKey(keyFile, keyPEM); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(pubFile, pubPEM, 0o644); err != nil {
		return "", "", fmt.Errorf("writing %s: %w", pubFile, err)
	}
	return keyFile, pubFile, nil
}
