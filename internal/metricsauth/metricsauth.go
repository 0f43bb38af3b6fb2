// Package metricsauth serves a component's Prometheus metrics over HTTPS to
// callers the API server vouches for: a bearer token it authenticates
// (TokenReview) whose user may get the non-resource URL /metrics
// (SubjectAccessReview), as kubebuilder scaffolds a new project. Metrics
// name every namespace and workload Lifeline acts on; plain HTTP on every
// interface would hand them, and a cheap way to load the process, to
// anyone who reaches the pod.
package metricsauth

import (
	"crypto/tls"
	"flag"
	"os"
	"path/filepath"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// The delegated authentication and authorization of scrapes.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// ReaderRole is the ClusterRole a scraper is bound to (config/rbac,
// and the chart's ServiceMonitor identity).
const ReaderRole = "lifeline-metrics-reader"

// Options say where and how metrics are served.
type Options struct {
	BindAddress string
	// Secure serves HTTPS with authentication and authorization; off, it
	// serves plain HTTP to anyone (for a cluster that guards the port
	// otherwise).
	Secure bool
	// CertDir holds tls.crt and tls.key; empty, a self-signed
	// certificate is generated at start.
	CertDir string
	// ServingCertDir, without CertDir, is a folder that holds tls.crt and
	// tls.key once another part of the process has written them (the
	// manager's webhook certificate, signed by a CA a scraper can be
	// given): served from then on, read again when they change; the
	// self-signed one until then.
	ServingCertDir string
}

// BindFlags binds the options to the command's flags.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.BindAddress, "metrics-bind-address", ":8443", "Address the Prometheus metrics endpoint binds to; \"0\" disables it.")
	fs.BoolVar(&o.Secure, "metrics-secure", true,
		"Serve metrics over HTTPS to callers whose bearer token the API server authenticates and whose user may get /metrics (ClusterRole "+ReaderRole+"); false serves plain HTTP to anyone.")
	fs.StringVar(&o.CertDir, "metrics-cert-dir", "", "Folder of the metrics serving certificate (tls.crt, tls.key); empty generates a self-signed one.")
}

// Server is the controller-runtime metrics server the options describe.
func (o Options) Server() metricsserver.Options {
	s := metricsserver.Options{BindAddress: o.BindAddress}
	if o.Secure {
		s.SecureServing = true
		s.FilterProvider = filters.WithAuthenticationAndAuthorization
		s.CertDir = o.CertDir
		s.TLSOpts = []func(*tls.Config){func(c *tls.Config) { c.MinVersion = tls.VersionTLS12 }}
		if o.CertDir == "" && o.ServingCertDir != "" {
			w := &servingCert{dir: o.ServingCertDir}
			s.TLSOpts = append(s.TLSOpts, func(c *tls.Config) { c.GetCertificate = w.get })
		}
	}
	return s
}

// servingCert reads a key pair from dir when its files change; nil (the
// self-signed certificate) while there is none.
type servingCert struct {
	dir     string
	mu      sync.Mutex
	modTime time.Time
	cert    *tls.Certificate
}

func (w *servingCert) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	crt, key := filepath.Join(w.dir, "tls.crt"), filepath.Join(w.dir, "tls.key")
	info, err := os.Stat(crt)
	if err != nil {
		return nil, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cert == nil || info.ModTime() != w.modTime {
		pair, err := tls.LoadX509KeyPair(crt, key)
		if err != nil {
			return w.cert, nil // half written: the last one until it is whole
		}
		w.cert, w.modTime = &pair, info.ModTime()
	}
	return w.cert, nil
}
