// Package webhookcerts keeps the webhook server's certificate: a CA and a
// serving certificate generated into a Secret, rotated before they expire,
// with the CA patched into the webhook configurations' caBundle. It wraps
// open-policy-agent's cert-controller, which does exactly this.
package webhookcerts

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Options name the Secret, the DNS name the API server reaches the webhook
// server by, and the webhook configurations to keep the CA in.
type Options struct {
	Secret                  types.NamespacedName
	DNSName                 string
	CertDir                 string
	MutatingConfiguration   string
	ValidatingConfiguration string
	// ServerCertDuration, Lookahead and CheckEvery tune rotation: a
	// certificate is renewed once it expires within Lookahead, checked
	// every CheckEvery. Zero means the rotator's defaults (a ten-year CA, a
	// one-year certificate, renewed 90 days ahead, checked every 12 hours).
	ServerCertDuration time.Duration
	Lookahead          time.Duration
	CheckEvery         time.Duration
	// ControllerName names the rotator's controller, which must be unique
	// in the process; "webhook-cert-rotator" when empty.
	ControllerName string
}

// The certificate Secret lives in the manager's namespace, in a Role of
// its own: reads and writes name it. create cannot be narrowed by name,
// and list and watch are the rotator's namespaced informer (cert-controller
// lists the namespace's Secrets without a field selector), so those two
// see the namespace's other Secrets: keep nothing else secret there.
// The webhook configurations' caBundle is written to Lifeline's two
// configurations only; the rotator's informer lists them all (they hold
// no secret).
// +kubebuilder:rbac:groups="",namespace=lifeline-system,resources=secrets,verbs=create;list;watch
// +kubebuilder:rbac:groups="",namespace=lifeline-system,resources=secrets,resourceNames=lifeline-webhook-certs,verbs=get;update;patch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations;validatingwebhookconfigurations,verbs=list;watch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations;validatingwebhookconfigurations,resourceNames=lifeline-mutating-webhooks;lifeline-validating-webhooks,verbs=get;update;patch

// Manage adds the certificate rotator to mgr. The returned channel closes
// once a valid certificate is in CertDir; only then may the webhook server
// start.
func Manage(mgr ctrl.Manager, o Options) (<-chan struct{}, error) {
	if o.Secret.Namespace == "" || o.Secret.Name == "" || o.DNSName == "" || o.CertDir == "" {
		return nil, fmt.Errorf("webhook certificates: secret, DNS name and certificate folder are required")
	}
	if err := ensureSecret(mgr, o.Secret); err != nil {
		return nil, err
	}
	// A certificate left in CertDir by an earlier run may be signed by a
	// CA the API server no longer trusts (a new cluster, a new Secret),
	// yet the rotator would take its presence for readiness. Only a copy
	// of the Secret counts.
	for _, name := range []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey, caFile} {
		if err := os.Remove(filepath.Join(o.CertDir, name)); err != nil && !os.IsNotExist(err) {
			return nil, fmt.Errorf("removing a stale webhook certificate: %w", err)
		}
	}
	ready := make(chan struct{})
	var webhooks []rotator.WebhookInfo
	if o.MutatingConfiguration != "" {
		webhooks = append(webhooks, rotator.WebhookInfo{Name: o.MutatingConfiguration, Type: rotator.Mutating})
	}
	if o.ValidatingConfiguration != "" {
		webhooks = append(webhooks, rotator.WebhookInfo{Name: o.ValidatingConfiguration, Type: rotator.Validating})
	}
	err := rotator.AddRotator(mgr, &rotator.CertRotator{
		SecretKey:      o.Secret,
		CertDir:        o.CertDir,
		CAName:         "lifeline-webhook-ca",
		CAOrganization: "lifeline",
		DNSName:        o.DNSName,
		IsReady:        ready,
		Webhooks:       webhooks,
		// Every replica serves webhooks, so every replica needs the
		// certificate, leader or not.
		RequireLeaderElection:  false,
		ServerCertDuration:     o.ServerCertDuration,
		LookaheadInterval:      o.Lookahead,
		RotationCheckFrequency: o.CheckEvery,
		ControllerName:         cmp.Or(o.ControllerName, "webhook-cert-rotator"),
	})
	if err != nil {
		return nil, err
	}
	slow := 10 * time.Second
	if o.CheckEvery > 0 && o.CheckEvery < slow {
		slow = o.CheckEvery
	}
	return ready, mgr.Add(&fileSync{reader: mgr.GetAPIReader(), secret: o.Secret, dir: o.CertDir, slow: slow})
}

// ensureSecret creates the certificate Secret, empty, if it is missing: the
// rotator fills in an existing Secret but does not create one.
func ensureSecret(mgr ctrl.Manager, key types.NamespacedName) error {
	c, err := client.New(mgr.GetConfig(), client.Options{})
	if err != nil {
		return err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	if err := c.Create(context.Background(), secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating webhook certificate secret %s: %w", key, err)
	}
	return nil
}

// fileSync copies the serving certificate from the Secret into CertDir, where
// the webhook server (and the rotator's readiness check) read it. The
// rotator expects the Secret mounted there as a volume; copying it instead
// works out of the cluster too (make dev), and in the cluster it avoids the
// kubelet's delay in refreshing mounted Secrets after a rotation.
type fileSync struct {
	reader client.Reader
	secret types.NamespacedName
	dir    string
	// slow is the poll interval once a certificate is in place.
	slow time.Duration
}

// NeedLeaderElection: every replica needs its own copy.
func (f *fileSync) NeedLeaderElection() bool { return false }

func (f *fileSync) Start(ctx context.Context) error {
	if err := os.MkdirAll(f.dir, 0o700); err != nil {
		return err
	}
	interval := 250 * time.Millisecond
	for {
		wrote, err := f.sync(ctx)
		if err != nil {
			log.FromContext(ctx).Error(err, "copying the webhook certificate", "secret", f.secret)
		}
		if wrote {
			log.FromContext(ctx).Info("webhook certificate copied", "secret", f.secret, "dir", f.dir)
		}
		// Fast until the first certificate arrives; rotations are rare
		// and come long before expiry, so a slow poll suffices after.
		if _, err := os.Stat(filepath.Join(f.dir, corev1.TLSCertKey)); err == nil {
			interval = f.slow
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// caFile is where cert-controller keeps the CA in the Secret, and so
// where cert-manager's Secrets keep it too.
const caFile = "ca.crt"

func (f *fileSync) sync(ctx context.Context) (bool, error) {
	secret := &corev1.Secret{}
	if err := f.reader.Get(ctx, f.secret, secret); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	cert, key := secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey]
	if len(cert) == 0 || len(key) == 0 {
		return false, nil
	}
	certPath, keyPath := filepath.Join(f.dir, corev1.TLSCertKey), filepath.Join(f.dir, corev1.TLSPrivateKeyKey)
	if old, err := os.ReadFile(certPath); err == nil && bytes.Equal(old, cert) {
		return false, nil
	}
	// Key first, certificate last: the rotator takes the certificate's
	// presence as the sign that both are there. The CA is the conversion
	// webhook's caBundle (conversion.Endpoint).
	for _, file := range []struct {
		path string
		data []byte
	}{{filepath.Join(f.dir, caFile), secret.Data[caFile]}, {keyPath, key}, {certPath, cert}} {
		tmp := file.path + ".tmp"
		if err := os.WriteFile(tmp, file.data, 0o600); err != nil {
			return false, err
		}
		if err := os.Rename(tmp, file.path); err != nil {
			return false, err
		}
	}
	return true, nil
}
