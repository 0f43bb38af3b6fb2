// Package webhookauth guards the webhook server's port, which anyone who
// reaches the pod can call, while the pod admission has side effects (a
// budget records an admitted delete, the hook guard marks a pod): every
// body is capped; where the cluster presents a client certificate to its
// webhooks (the API server's admission configuration, docs/install.md),
// admission requests without that certificate are refused; and the pod
// admission answers each source at a bounded rate, so a forger that gets
// through neither check still cannot flood a budget's records.
package webhookauth

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

var refused = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "lifeline_webhook_requests_refused_total",
	Help: "Requests the webhook server refused before any handler, by path and reason (client-certificate: none, or not the API server's; rate: over a source's limit).",
}, []string{"path", "reason"})

func init() { metrics.Registry.MustRegister(refused) }

// Options are the guards.
type Options struct {
	// ClientCA is the PEM file of the CA that signs the certificate the
	// API server presents to webhooks; empty verifies none.
	ClientCA string
	// ClientNames, if set, are the common names such a certificate may
	// have (the CA may sign other clients).
	ClientNames []string
	// Open are the paths served without a client certificate: the
	// conversion webhook, whose caller (the CRDs' conversion) presents
	// none.
	Open []string
	// Limited are the paths each source may call at most PerSecond times
	// a second (Burst at once).
	Limited   []string
	PerSecond float64
	Burst     int
	// MaxBody caps a request body; admission reviews are capped at 7 MiB
	// by controller-runtime already.
	MaxBody int64
}

// BindFlags binds the flags users set.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.ClientCA, "webhook-client-ca", "", "PEM file of the CA that signs the client certificate the API server presents to webhooks (its admission configuration); admission requests without such a certificate are refused. Empty: the port takes any caller (restrict it with a NetworkPolicy).")
	fs.Func("webhook-client-names", "Comma-separated common names the API server's webhook client certificate may have; empty: any the CA signed.", func(s string) error {
		o.ClientNames = strings.Split(s, ",")
		return nil
	})
	fs.Float64Var(&o.PerSecond, "webhook-source-qps", 500, "How many pod admissions (validate) one source address may ask a second; more are answered 429, to retry.")
	fs.IntVar(&o.Burst, "webhook-source-burst", 2000, "How many pod admissions one source may ask at once above --webhook-source-qps.")
}

// TLS is the server's TLS option: a client certificate is verified if
// given (the conversion webhook's caller gives none); which paths require
// one is the handler's affair.
func (o Options) TLS() (func(*tls.Config), error) {
	if o.ClientCA == "" {
		return func(*tls.Config) {}, nil
	}
	pem, err := os.ReadFile(o.ClientCA)
	if err != nil {
		return nil, fmt.Errorf("--webhook-client-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--webhook-client-ca %s: no certificate in it", o.ClientCA)
	}
	return func(c *tls.Config) {
		c.ClientCAs = pool
		c.ClientAuth = tls.VerifyClientCertIfGiven
	}, nil
}

// Server is a webhook server whose every handler is guarded.
type Server struct {
	webhook.Server
	o        Options
	mu       sync.Mutex
	limiters *lru.Cache // source host → *rate.Limiter
}

// maxSources bounds the buckets kept: the least recently seen source past
// it loses its bucket (and gets a full one if it comes back), while a
// steady source keeps its own.
const maxSources = 1000

// New wraps s.
func New(s webhook.Server, o Options) *Server {
	if o.MaxBody == 0 {
		o.MaxBody = 64 << 20
	}
	return &Server{Server: s, o: o, limiters: lru.New(maxSources)}
}

// Register registers h at path, guarded.
func (s *Server) Register(path string, h http.Handler) { s.Server.Register(path, s.Guard(path, h)) }

// Guard is h behind the guards for path.
func (s *Server) Guard(path string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, s.o.MaxBody)
		if s.o.ClientCA != "" && !slices.Contains(s.o.Open, path) && !s.fromAPIServer(r) {
			refused.WithLabelValues(path, "client-certificate").Inc()
			http.Error(w, "a client certificate of the API server is required", http.StatusForbidden)
			return
		}
		if slices.Contains(s.o.Limited, path) && !s.allow(r.RemoteAddr) {
			refused.WithLabelValues(path, "rate").Inc()
			retryLater(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func (s *Server) fromAPIServer(r *http.Request) bool {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
		return false
	}
	return len(s.o.ClientNames) == 0 || slices.Contains(s.o.ClientNames, r.TLS.VerifiedChains[0][0].Subject.CommonName)
}

// allow takes a token from the source's bucket.
func (s *Server) allow(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.limiters.Get(host); ok {
		return l.(*rate.Limiter).Allow()
	}
	l := rate.NewLimiter(rate.Limit(s.o.PerSecond), s.o.Burst)
	s.limiters.Add(host, l)
	return l.Allow()
}

// retryLater answers an AdmissionReview with 429, to retry: a plain 429
// would read as a broken webhook to the API server.
func retryLater(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	in := admissionv1.AdmissionReview{}
	_ = json.NewDecoder(bytes.NewReader(body)).Decode(&in)
	out := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Response: &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Status: metav1.StatusFailure,
			Code: http.StatusTooManyRequests, Reason: metav1.StatusReasonTooManyRequests,
			Message: "too many admission requests from this source; retry", Details: &metav1.StatusDetails{RetryAfterSeconds: 1}}}}
	if in.Request != nil {
		out.Response.UID = in.Request.UID
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}
