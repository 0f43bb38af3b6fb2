package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"os"
	"path/filepath"
)

// WebhookClientName is the common name of the client certificate the
// local API server presents to every webhook it calls; the manager takes
// admission requests only with it (--webhook-client-ca, the cluster's CA,
// and --webhook-client-names).
const WebhookClientName = "kube-apiserver-webhook-client"

// webhookClientConfig issues the API server's webhook client certificate
// and writes the admission configuration that presents it to every
// webhook ("*"), as a cluster's operator would; it returns the
// configuration's path.
func (c *Cluster) webhookClientConfig(ca *authority, dir string) (string, error) {
	cert, key, err := ca.issue("apiserver-webhook-client", pkix.Name{CommonName: WebhookClientName}, x509.ExtKeyUsageClientAuth, nil, nil)
	if err != nil {
		return "", err
	}
	c.webhookClientCert, c.webhookClientKey = cert, key
	kubeconfig := filepath.Join(dir, "webhook-client.kubeconfig")
	users := fmt.Sprintf("apiVersion: v1\nkind: Config\nusers:\n- name: '*'\n  user:\n    client-certificate: %s\n    client-key: %s\n", cert, key)
	if err := os.WriteFile(kubeconfig, []byte(users), 0o600); err != nil {
		return "", err
	}
	config := filepath.Join(dir, "admission.yaml")
	plugin := func(name string) string {
		return fmt.Sprintf("- name: %s\n  configuration:\n    apiVersion: apiserver.config.k8s.io/v1\n    kind: WebhookAdmissionConfiguration\n    kubeConfigFile: %s\n", name, kubeconfig)
	}
	body := "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n" + plugin("ValidatingAdmissionWebhook") + plugin("MutatingAdmissionWebhook")
	return config, os.WriteFile(config, []byte(body), 0o600)
}

// WebhookClientArgs are the manager's flags that require the local API
// server's webhook client certificate.
func (c *Cluster) WebhookClientArgs() []string {
	return []string{"--webhook-client-ca=" + c.ca.caFile(), "--webhook-client-names=" + WebhookClientName}
}

// webhookClient is the API server's webhook client certificate, which the
// harness's balancer (replica.go) presents in its stead: a Service passes
// the API server's own through, a terminating balancer cannot.
func (c *Cluster) webhookClient() (tls.Certificate, error) {
	return tls.LoadX509KeyPair(c.webhookClientCert, c.webhookClientKey)
}

// WebhookClient is the API server's webhook client certificate, for a
// test that calls a webhook as the API server would.
func (c *Cluster) WebhookClient() (tls.Certificate, error) { return c.webhookClient() }
