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
	}
	return s
}
