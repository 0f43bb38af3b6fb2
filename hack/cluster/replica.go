package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"

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

	first, balanced int
	server          *http.Server
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
	ports, err := FreePorts(4)
	if err != nil {
		return nil, err
	}
	second := &Lifeline{Name: l.Name + "-2", MetricsURL: fmt.Sprintf("https://127.0.0.1:%d/metrics", ports[0]), Scraper: l.Scraper, bin: l.bin,
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
	if err := r.serve(ctx, c, []int{l.webhookPort, second.webhookPort}); err != nil {
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
	return errors.Join(c.pointWebhooks(ctx, r.first), r.server.Close(), c.StopProcess(r.Second.Name, syscall.SIGTERM))
}

func (r *Replicas) serve(ctx context.Context, c *Cluster, backends []int) error {
	kc, err := client.New(c.Config, client.Options{})
	if err != nil {
		return err
	}
	secret := &corev1.Secret{}
	if err := kc.Get(ctx, client.ObjectKey{Namespace: "lifeline-system", Name: "lifeline-webhook-certs"}, secret); err != nil {
		return err
	}
	cert, err := tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return fmt.Errorf("the managers' webhook certificate: %w", err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(secret.Data["ca.crt"])
	var next atomic.Int64
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			i := int(next.Add(1)) % len(backends)
			r.Served[i].Add(1)
			pr.SetURL(&url.URL{Scheme: "https", Host: fmt.Sprintf("localhost:%d", backends[i])})
		},
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 100},
	}
	ln, err := tls.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", r.balanced), &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}})
	if err != nil {
		return err
	}
	r.server = &http.Server{Handler: proxy}
	go func() { _ = r.server.Serve(ln) }()
	return nil
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
	return kc.Update(ctx, m)
}
