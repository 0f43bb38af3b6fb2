package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// Scraper reads Lifeline's metrics as a Prometheus in the cluster would:
// over HTTPS, with the token of a service account bound to the
// lifeline-metrics-reader ClusterRole (config/rbac). The components
// serve a self-signed certificate on loopback, which it does not verify.
type Scraper struct {
	client *http.Client
	token  string
}

// Scraper returns the cluster's metrics scraper, creating its service
// account, binding and token the first time.
func (c *Cluster) Scraper(ctx context.Context) (*Scraper, error) {
	c.scraperMu.Lock()
	defer c.scraperMu.Unlock()
	if c.scraper != nil {
		return c.scraper, nil
	}
	token, err := ServiceAccountToken(ctx, c.Config, ManagerNamespace, "metrics-scraper", "lifeline-metrics-reader")
	if err != nil {
		return nil, fmt.Errorf("a metrics scraper's token: %w", err)
	}
	c.scraper = NewScraper(token)
	return c.scraper, nil
}

// NewScraper sends token with its requests ("" for none).
func NewScraper(token string) *Scraper {
	return &Scraper{token: token, client: &http.Client{Timeout: 10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}} // #nosec: loopback, self-signed
}

// ServiceAccountToken creates a service account bound to a ClusterRole
// (none when role is "") and returns a token for it.
func ServiceAccountToken(ctx context.Context, cfg *rest.Config, namespace, name, role string) (string, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if _, err := cs.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	if role != "" {
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: namespace + "-" + name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}},
		}
		if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", err
		}
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](24 * 3600)}}
	got, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, req, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return got.Status.Token, nil
}

// Get sends an authenticated GET to url and returns the response, which
// the caller closes.
func (s *Scraper) Get(url string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	return s.client.Do(req)
}

// Families reads and parses the metrics at url.
func (s *Scraper) Families(url string) (map[string]*dto.MetricFamily, error) {
	resp, err := s.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(resp.Body)
}

// Value reads a counter or gauge at url: the first series carrying every
// label of labels with its value, 0 when there is none, -1 when the
// metrics cannot be read.
func (s *Scraper) Value(url, name string, labels map[string]string) float64 {
	families, err := s.Families(url)
	if err != nil {
		return -1
	}
	f, ok := families[name]
	if !ok {
		return 0
	}
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		matches := true
		for k, v := range labels {
			matches = matches && have[k] == v
		}
		if !matches {
			continue
		}
		if m.GetGauge() != nil {
			return m.GetGauge().GetValue()
		}
		return m.GetCounter().GetValue()
	}
	return 0
}
