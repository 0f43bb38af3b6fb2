package conversion

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// The manager writes only the conversion stanza of the CRDs it converts,
// found by name; it never lists CRDs.
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,resourceNames=clonesets.apps.kruise.io;persistentpodstates.apps.kruise.io;podunavailablebudgets.policy.kruise.io;statefulsets.apps.kruise.io;daemonsets.apps.kruise.io,verbs=get;update

// Endpoint keeps the conversion webhook of the CRDs it names pointing at
// this manager: through its Service in the cluster, or a URL outside it
// (make dev), with the CA of its serving certificate. The manifests point
// at lifeline-system; a chart installed elsewhere, a rotated CA and a
// manager run outside the cluster are all mended here, on every replica
// (each writes the same stanza).
type Endpoint struct {
	Client client.Client
	// CRDs are the names of the CRDs to keep (plural.group).
	CRDs []string
	// Service, or else URL (the server's base; Path is appended), is
	// where the API server calls.
	Service *apiextensionsv1.ServiceReference
	URL     string
	// CAFile holds the PEM CA the API server verifies the server with.
	CAFile string
	// Every is how often the stanza is checked (a CA rotation or a
	// re-applied manifest is mended within it).
	Every time.Duration

	// located holds the CRDs this replica has pointed at its URL. After
	// that it mends only the CA and a stanza gone missing: outside a
	// cluster each replica has a URL of its own (tests put a balancer in
	// front of two), and the last one started decides. Replicas in a
	// cluster share the Service and always mend the whole stanza.
	located map[string]bool
	ready   atomic.Bool
}

// Ready is the readiness check: nil once every CRD has been pointed at
// this manager, so that a replica takes no traffic (and make dev reports
// no cluster ready) before v1alpha1 requests convert.
func (e *Endpoint) Ready(*http.Request) error {
	if !e.ready.Load() {
		return errors.New("the CRDs' conversion webhook is not pointed at this manager yet")
	}
	return nil
}

// CRDName is the name of the CRD serving gk, whose plural is resource.
func CRDName(gk schema.GroupKind, resource string) string { return resource + "." + gk.Group }

// NeedLeaderElection: conversion must work while no replica leads.
func (e *Endpoint) NeedLeaderElection() bool { return false }

// Start keeps the stanza until ctx ends; a failure is logged and retried.
func (e *Endpoint) Start(ctx context.Context) error {
	for {
		done, err := e.ensureAll(ctx)
		if err != nil {
			log.FromContext(ctx).Error(err, "keeping the CRDs' conversion webhook")
		}
		if done {
			e.ready.Store(true)
		}
		// Fast until the first certificate is there and written.
		interval := e.Every
		if !e.ready.Load() {
			interval = 250 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// ensureAll points every CRD at this manager and reports whether all are.
func (e *Endpoint) ensureAll(ctx context.Context) (bool, error) {
	ca, err := os.ReadFile(e.CAFile)
	if err != nil {
		if os.IsNotExist(err) {
			return false, nil // no certificate yet
		}
		return false, err
	}
	want := e.clientConfig(ca)
	if e.located == nil {
		e.located = map[string]bool{}
	}
	var errs []error
	for _, name := range e.CRDs {
		errs = append(errs, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := e.Client.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				if apierrors.IsNotFound(err) {
					return nil
				}
				return err
			}
			if !PointConversion(crd, want, e.URL != "" && e.located[name]) {
				e.located[name] = true
				return nil
			}
			log.FromContext(ctx).Info("pointing the CRD's conversion webhook at this manager", "crd", name)
			if err := e.Client.Update(ctx, crd); err != nil {
				return err
			}
			e.located[name] = true
			return nil
		}))
	}
	err = errors.Join(errs...)
	return err == nil, err
}

func (e *Endpoint) clientConfig(ca []byte) apiextensionsv1.WebhookClientConfig {
	cc := apiextensionsv1.WebhookClientConfig{CABundle: ca}
	path := Path
	if e.Service != nil {
		svc := *e.Service
		svc.Path = &path
		if svc.Port == nil {
			// What the API server defaults it to; set, so that a read
			// compares equal.
			port := int32(443)
			svc.Port = &port
		}
		cc.Service = &svc
	} else {
		url := e.URL + Path
		cc.URL = &url
	}
	return cc
}

// PointConversion sets crd's conversion to this manager's webhook and
// reports whether anything changed. When located, a stanza that calls a
// webhook with the right CA is left where it points. ConversionReview v1
// only: every supported API server speaks it.
func PointConversion(crd *apiextensionsv1.CustomResourceDefinition, cc apiextensionsv1.WebhookClientConfig, located bool) bool {
	if c := crd.Spec.Conversion; located && c != nil && c.Strategy == apiextensionsv1.WebhookConverter &&
		c.Webhook != nil && c.Webhook.ClientConfig != nil && bytes.Equal(c.Webhook.ClientConfig.CABundle, cc.CABundle) {
		return false
	}
	want := &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ClientConfig:             &cc,
			ConversionReviewVersions: []string{"v1"},
		},
	}
	if equality.Semantic.DeepEqual(crd.Spec.Conversion, want) {
		return false
	}
	crd.Spec.Conversion = want
	return true
}

// ValidURL checks a --webhook-url.
func ValidURL(url string) error {
	if !strings.HasPrefix(url, "https://") {
		return fmt.Errorf("%q: the API server calls webhooks over https only", url)
	}
	return nil
}
