package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Replicas are two lifeline-managers serving the webhooks together behind
// a loopback balancer, as two pods behind a Service would.
type Replicas struct {
	// Second is the replica started next to the first.
	Second *Lifeline
	// Served counts the admission requests sent to each replica.
	Served [2]atomic.Int64
	// Failed counts the admission requests no replica answered: the API
	// server then applied the webhook's failure policy.
	Failed atomic.Int64
	// failures are when those requests came in and why (FailedSince).
	failedMu sync.Mutex
	failures []failure
	// open counts the balancer's connections to each replica
	// (Connections).
	open [2]atomic.Int64

	first, balanced int
	server          *http.Server
	stop            context.CancelFunc
	// ready says which replicas answer their readiness check, as a
	// Service's endpoints would.
	ready [2]atomic.Bool
}

// StartReplica starts a second lifeline-manager like l (the same binary,
// identity and flags; its own ports and certificate folder) and puts an
// HTTPS balancer in front of both: the webhook configurations are
// repointed at it and it sends each admission request to the replicas in
// turn. (A TCP balancer would not do: the API server multiplexes every
// call over one HTTP/2 connection.) The balancer serves the certificate
// the managers share, from their Secret, so the API server trusts it as
// it trusts them. Only one replica leads the controllers; both admit.
// Stop undoes it all.
func (c *Cluster) StartReplica(ctx context.Context, l *Lifeline) (*Replicas, error) {
	return c.StartReplicaFrom(ctx, l, l.bin)
}

// StartReplicaFrom is StartReplica with the second replica running bin
// (one unpacked from the image).
func (c *Cluster) StartReplicaFrom(ctx context.Context, l *Lifeline, bin string) (*Replicas, error) {
	ports, err := FreePorts(4)
	if err != nil {
		return nil, err
	}
	second := &Lifeline{Name: l.Name + "-2", MetricsURL: fmt.Sprintf("https://127.0.0.1:%d/metrics", ports[0]), Scraper: l.Scraper, bin: bin,
		readyz: fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[1]), webhookPort: ports[2]}
	for _, arg := range l.args {
		flag, _, _ := strings.Cut(arg, "=")
		switch flag {
		case "--metrics-bind-address":
			arg = fmt.Sprintf("%s=127.0.0.1:%d", flag, ports[0])
		case "--health-probe-bind-address":
			arg = fmt.Sprintf("%s=127.0.0.1:%d", flag, ports[1])
		case "--webhook-port":
			arg = fmt.Sprintf("%s=%d", flag, ports[2])
		case "--webhook-url":
			// The harness points the CRDs' conversion at the balancer,
			// as it does the webhook configurations (pointWebhooks); the
			// first replica, having pointed it once, leaves it there.
			arg = "--webhook-conversion=false"
		case "--webhook-cert-dir":
			arg = flag + "=" + filepath.Join(c.Dir, "webhook-certs-2")
		}
		second.args = append(second.args, arg)
	}
	if err := c.StartProcess(second.Name, second.bin, second.args...); err != nil {
		return nil, err
	}
	if err := c.waitReady(ctx, second); err != nil {
		return nil, err
	}
	r := &Replicas{Second: second, first: l.webhookPort, balanced: ports[3]}
	if err := r.serve(ctx, c, []int{l.webhookPort, second.webhookPort}, []string{l.readyz, second.readyz}); err != nil {
		return nil, err
	}
	if err := c.pointWebhooks(ctx, r.balanced); err != nil {
		return nil, err
	}
	return r, nil
}

// Stop points the webhooks back at the first replica and stops the
// balancer and the second replica.
func (r *Replicas) Stop(ctx context.Context, c *Cluster) error {
	r.stop()
	return errors.Join(c.pointWebhooks(ctx, r.first), r.server.Close(), c.StopProcess(r.Second.Name, syscall.SIGTERM))
}

// serve runs the balancer as a Service with kube-proxy would: requests go
// to the ready replicas in turn (readiness polled every 100ms, as the
// endpoints follow the kubelet's probes), and a request whose connection
// is refused (so it never reached the replica) goes to the other.
func (r *Replicas) serve(ctx context.Context, c *Cluster, backends []int, readyz []string) error {
	kc, err := client.New(c.Config, client.Options{})
	if err != nil {
		return err
	}
	secret := &corev1.Secret{}
	if err := kc.Get(ctx, client.ObjectKey{Namespace: ManagerNamespace, Name: "lifeline-webhook-certs"}, secret); err != nil {
		return err
	}
	cert, err := tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return fmt.Errorf("the managers' webhook certificate: %w", err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(secret.Data["ca.crt"])
	apiServer, err := c.webhookClient()
	if err != nil {
		return err
	}
	pollCtx, stop := context.WithCancel(context.Background())
	r.stop = stop
	for i := range readyz {
		r.ready[i].Store(true)
		go r.pollReady(pollCtx, i, readyz[i])
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(&url.URL{Scheme: "https", Host: "replicas"}) },
		Transport: &failover{r: r, backends: backends,
			base: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{apiServer}}, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 100,
				DialContext: r.dialCounting(backends)}},
		ErrorHandler: func(w http.ResponseWriter, req *http.Request, err error) {
			r.Failed.Add(1)
			if at, ok := req.Context().Value(arrivedKey{}).(time.Time); ok {
				r.failedMu.Lock()
				r.failures = append(r.failures, failure{at: at, err: err.Error()})
				r.failedMu.Unlock()
			}
			http.Error(w, err.Error(), http.StatusBadGateway)
		},
	}
	ln, err := tls.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", r.balanced), &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}})
	if err != nil {
		return err
	}
	r.server = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		proxy.ServeHTTP(w, req.WithContext(context.WithValue(req.Context(), arrivedKey{}, time.Now())))
	})}
	go func() { _ = r.server.Serve(ln) }()
	return nil
}

type arrivedKey struct{}

type failure struct {
	at  time.Time
	err string
}

// FailedSince says why each admission request that came in at t or
// later went unanswered by every replica. A request already at a replica
// when it is SIGKILLed is lost with it, as behind a Service; so is one
// sent on a connection to it before the balancer has seen that
// connection close (the API server's connection to a killed pod fails
// alike). One that comes after (Connections is 0) must reach the other
// replica.
func (r *Replicas) FailedSince(t time.Time) []string {
	r.failedMu.Lock()
	defer r.failedMu.Unlock()
	var errs []string
	for _, f := range r.failures {
		if !f.at.Before(t) {
			errs = append(errs, f.err)
		}
	}
	return errs
}

// Connections counts the balancer's open connections to replica i (0:
// the first, 1: Second). Once a killed replica's are 0, every request
// dials, and a refused dial goes to the other replica.
func (r *Replicas) Connections(i int) int64 { return r.open[i].Load() }

// dialCounting dials as the transport would and counts each connection
// to a replica as open until it is closed or a read from it fails (the
// transport reads every connection it keeps, so a peer's exit is seen).
func (r *Replicas) dialCounting(backends []int) func(context.Context, string, string) (net.Conn, error) {
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		_, port, _ := net.SplitHostPort(addr)
		for i, b := range backends {
			if port == fmt.Sprint(b) {
				r.open[i].Add(1)
				return &countedConn{Conn: conn, gone: func() { r.open[i].Add(-1) }}, nil
			}
		}
		return conn, nil
	}
}

// countedConn calls gone once, at its first failed read or at Close.
type countedConn struct {
	net.Conn
	once sync.Once
	gone func()
}

func (c *countedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil {
		c.once.Do(c.gone)
	}
	return n, err
}

func (c *countedConn) Close() error {
	c.once.Do(c.gone)
	return c.Conn.Close()
}

func (r *Replicas) pollReady(ctx context.Context, i int, readyz string) {
	probe := &http.Client{Timeout: time.Second}
	for ctx.Err() == nil {
		resp, err := probe.Get(readyz)
		ok := err == nil && resp.StatusCode == http.StatusOK
		if resp != nil {
			resp.Body.Close()
		}
		r.ready[i].Store(ok)
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// failover sends each request to the next ready replica, and to another
// when the connection is refused.
type failover struct {
	r        *Replicas
	backends []int
	base     http.RoundTripper
	next     atomic.Int64
}

func (f *failover) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	start := int(f.next.Add(1))
	var last error
	for k := range f.backends {
		i := (start + k) % len(f.backends)
		if !f.r.ready[i].Load() && k < len(f.backends)-1 {
			continue
		}
		out := req.Clone(req.Context())
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.URL.Host, out.Host = fmt.Sprintf("localhost:%d", f.backends[i]), ""
		f.r.Served[i].Add(1)
		resp, err := f.base.RoundTrip(out)
		var op *net.OpError
		if err == nil || !errors.As(err, &op) || op.Op != "dial" {
			return resp, err // delivered, or maybe delivered: never sent twice
		}
		last = err
	}
	return nil, last
}

// pointWebhooks points every installed Lifeline webhook at port on
// localhost, keeping everything else (the caBundle included).
func (c *Cluster) pointWebhooks(ctx context.Context, port int) error {
	kc, err := client.New(c.Config, client.Options{})
	if err != nil {
		return err
	}
	repoint := func(cc *admissionregistrationv1.WebhookClientConfig) {
		if cc.URL == nil {
			return
		}
		u, err := url.Parse(*cc.URL)
		if err != nil || u.Hostname() != "localhost" {
			return
		}
		u.Host = net.JoinHostPort("localhost", fmt.Sprint(port))
		s := u.String()
		cc.URL = &s
	}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := kc.Get(ctx, client.ObjectKey{Name: "lifeline-validating-webhooks"}, v); err != nil {
		return err
	}
	for i := range v.Webhooks {
		repoint(&v.Webhooks[i].ClientConfig)
	}
	if err := kc.Update(ctx, v); err != nil {
		return err
	}
	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := kc.Get(ctx, client.ObjectKey{Name: "lifeline-mutating-webhooks"}, m); err != nil {
		return err
	}
	for i := range m.Webhooks {
		repoint(&m.Webhooks[i].ClientConfig)
	}
	if err := kc.Update(ctx, m); err != nil {
		return err
	}
	// The CRDs' conversion too. A manager run with --webhook-url leaves a
	// stanza it has pointed once where it is, as long as its CA is there.
	for _, name := range ConvertedCRDs {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			crd := &unstructured.Unstructured{}
			crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
			if err := kc.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				return err
			}
			u, found, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "webhook", "clientConfig", "url")
			if !found {
				return nil
			}
			cc := admissionregistrationv1.WebhookClientConfig{URL: &u}
			repoint(&cc)
			if err := unstructured.SetNestedField(crd.Object, *cc.URL, "spec", "conversion", "webhook", "clientConfig", "url"); err != nil {
				return err
			}
			return kc.Update(ctx, crd)
		})
		if err != nil {
			return fmt.Errorf("pointing %s's conversion at port %d: %w", name, port, err)
		}
	}
	return nil
}

// ConvertedCRDs are the CRDs whose conversion the manager serves.
var ConvertedCRDs = []string{"clonesets.apps.kruise.io", "persistentpodstates.apps.kruise.io", "podunavailablebudgets.policy.kruise.io", "statefulsets.apps.kruise.io", "daemonsets.apps.kruise.io"}
