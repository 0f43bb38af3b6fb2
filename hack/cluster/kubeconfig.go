package cluster

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// WriteKubeconfig writes a kubeconfig for a client certificate with the given
// user name and groups, signed by the cluster's CA, and returns its path.
func (c *Cluster) WriteKubeconfig(user string, groups ...string) (string, error) {
	return c.writeKubeconfig(user, pkix.Name{CommonName: user, Organization: groups})
}

// WriteKubeconfigVia is WriteKubeconfig for a client that reaches the API
// server at server (a proxy in front of it), under the file name file.
func (c *Cluster) WriteKubeconfigVia(server, file, user string, groups ...string) (string, error) {
	return c.writeKubeconfigTo(server, file, user, pkix.Name{CommonName: user, Organization: groups})
}

func (c *Cluster) writeKubeconfig(name string, subject pkix.Name) (string, error) {
	return c.writeKubeconfigTo(c.server, name, name, subject)
}

func (c *Cluster) writeKubeconfigTo(server, file, name string, subject pkix.Name) (string, error) {
	certFile, keyFile, err := c.ca.issue("client-"+name, subject, x509.ExtKeyUsageClientAuth, nil, nil)
	if err != nil {
		return "", err
	}
	read := func(p string) []byte { b, _ := os.ReadFile(p); return b }
	return c.writeKubeconfigAs(server, file, name, &clientcmdapi.AuthInfo{ClientCertificateData: read(certFile), ClientKeyData: read(keyFile)})
}

// writeKubeconfigAs writes c.Dir/<file>.kubeconfig for server, trusting
// the cluster's CA, with the credentials auth under name.
func (c *Cluster) writeKubeconfigAs(server, file, name string, auth *clientcmdapi.AuthInfo) (string, error) {
	ca, err := os.ReadFile(c.ca.caFile())
	if err != nil {
		return "", err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["lifeline-dev"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos[name] = auth
	cfg.Contexts["lifeline-dev"] = &clientcmdapi.Context{Cluster: "lifeline-dev", AuthInfo: name}
	cfg.CurrentContext = "lifeline-dev"
	path := filepath.Join(c.Dir, file+".kubeconfig")
	return path, clientcmd.WriteToFile(*cfg, path)
}
