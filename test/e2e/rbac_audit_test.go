package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	"github.com/lifeline-k8s/lifeline/hack/binaries"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
	"github.com/lifeline-k8s/lifeline/internal/hookhandlers"
	"github.com/lifeline-k8s/lifeline/internal/protection"
	"github.com/lifeline-k8s/lifeline/test/testenv"
)

// unprovable are the rules no probe can show missing, and why they stay.
var unprovable = map[string]string{
	"Role lifeline-bridge: events create,patch": "the leader election's events in the lease's namespace: refused, they are only logged",
}

// TestRBACRuleRemoval removes each rule of the manager's generated roles in
// turn (from the live ClusterRole or Role), restarts the manager and runs
// a probe of what it does: become ready, serve metrics, run a CloneSet with
// a claim template through scale-up, an in-place update and a scale-in,
// enforce a budget (status, namespace label, event, a refused eviction),
// count a budget's Deployment through its scale subresource, record a
// StatefulSet pod in a PersistentPodState. Some step must fail for every
// rule, or the rule is listed in unprovable with its reason. make test
// runs three rules; make rbac-audit (LIFELINE_RBAC_AUDIT=all) runs all and
// prints the table.
func TestRBACRuleRemoval(t *testing.T) {
	root, err := binaries.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	roles := generatedRoles(t, filepath.Join(root, "config", "rbac", "role.yaml"))
	restore := func() error { return local.RestartLifeline(context.Background(), lifeline, syscall.SIGTERM) }
	auditRoles(t, roles, []string{"namespaces", "*/scale", "leases [lifeline-manager.lifeline.dev]"}, restartAndProbe, restore)
}

// auditRoles removes each selected rule of roles in turn, runs restartAndProbe,
// puts the rule back and restores; it fails the test for a rule no probe
// needed, and logs the table. LIFELINE_RBAC_AUDIT selects the rules: "all",
// a part of their descriptions, or (empty) the rules named in short.
func auditRoles(t *testing.T, roles []*role, short []string, restartAndProbe func(*testing.T) error, restore func() error) {
	t.Helper()
	ctx := context.Background()
	if err := restartAndProbe(t); err != nil {
		t.Fatalf("the probe fails with every rule in place: %v", err)
	}
	only := os.Getenv("LIFELINE_RBAC_AUDIT")
	var table []string
	for _, r := range roles {
		for i := range r.rules {
			name := r.describe(i)
			switch {
			case only == "all":
			case only != "":
				if !strings.Contains(name, only) {
					continue
				}
			case !slices.Contains(short, ruleResources(r.rules[i])):
				continue
			}
			if err := r.apply(ctx, i); err != nil {
				t.Fatal(err)
			}
			failure := restartAndProbe(t)
			if err := r.apply(ctx, -1); err != nil {
				t.Fatal(err)
			}
			if err := restore(); err != nil {
				t.Fatalf("restarting with every rule: %v", err)
			}
			row := fmt.Sprintf("| %s | %s |", name, "no probe failed")
			switch {
			case failure != nil:
				row = fmt.Sprintf("| %s | %s |", name, strings.ReplaceAll(failure.Error(), "|", "/"))
			case unprovable[name] != "":
				row = fmt.Sprintf("| %s | no probe failed; kept: %s |", name, unprovable[name])
			default:
				t.Errorf("without %s no probe failed, and no reason to keep it is given", name)
			}
			table = append(table, row)
		}
	}
	t.Logf("rule removed | first probe that failed\n%s", strings.Join(table, "\n"))
}

// role is one generated role as it lives in the cluster.
type role struct {
	obj   ctrlclient.Object
	rules []rbacv1.PolicyRule
}

func generatedRoles(t *testing.T, path string) []*role {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []*role
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatal(err)
		}
		switch meta.Kind {
		case "ClusterRole":
			cr := &rbacv1.ClusterRole{}
			if err := yaml.Unmarshal([]byte(doc), cr); err != nil {
				t.Fatal(err)
			}
			out = append(out, &role{obj: cr, rules: cr.Rules})
		case "Role":
			r := &rbacv1.Role{}
			if err := yaml.Unmarshal([]byte(doc), r); err != nil {
				t.Fatal(err)
			}
			out = append(out, &role{obj: r, rules: r.Rules})
		}
	}
	return out
}

func ruleResources(r rbacv1.PolicyRule) string {
	s := strings.Join(r.Resources, ",")
	if len(r.ResourceNames) > 0 {
		s += " [" + strings.Join(r.ResourceNames, ",") + "]"
	}
	return s
}

func (r *role) describe(i int) string {
	kind := "ClusterRole"
	if _, ok := r.obj.(*rbacv1.Role); ok {
		kind = "Role"
	}
	return fmt.Sprintf("%s %s: %s %s", kind, r.obj.GetName(), ruleResources(r.rules[i]), strings.Join(r.rules[i].Verbs, ","))
}

// apply writes the role without rule skip (-1: with every rule).
func (r *role) apply(ctx context.Context, skip int) error {
	var rules []rbacv1.PolicyRule
	for i, rule := range r.rules {
		if i != skip {
			rules = append(rules, rule)
		}
	}
	key := ctrlclient.ObjectKeyFromObject(r.obj)
	switch r.obj.(type) {
	case *rbacv1.ClusterRole:
		live := &rbacv1.ClusterRole{}
		if err := k8s.Get(ctx, key, live); err != nil {
			return err
		}
		live.Rules = rules
		return k8s.Update(ctx, live)
	default:
		live := &rbacv1.Role{}
		if err := k8s.Get(ctx, key, live); err != nil {
			return err
		}
		live.Rules = rules
		return k8s.Update(ctx, live)
	}
}

// restartAndProbe restarts the manager as a first install starts it (a
// fresh cache, fresh permissions, no leader lease yet) and probes it; nil
// when every step passed.
func restartAndProbe(t *testing.T) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := local.StopProcess(lifeline.Name, syscall.SIGTERM); err != nil {
		return err
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: cluster.ManagerNamespace, Name: "lifeline-manager.lifeline.dev"}}
	if err := k8s.Delete(ctx, lease); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	// Nor the hook handlers it publishes.
	handlers := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cluster.ManagerNamespace, Name: hookhandlers.ConfigMapName}}
	if err := k8s.Delete(ctx, handlers); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if err := local.StartLifelineAgain(ctx, lifeline); err != nil {
		return fmt.Errorf("manager ready: %v", err)
	}
	return probe(t)
}

// within polls cond until it holds or d passes, and then says what did
// not happen and the last reason cond gave: a probe step, which the
// audit reports rather than fails on.
func within(what string, d time.Duration, cond func(ctx context.Context) (bool, string, error)) error {
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, d, true, func(ctx context.Context) (bool, error) {
		ok, why, err := cond(ctx)
		if ctx.Err() == nil {
			last = why // a reason cut short by the deadline says nothing
		}
		return ok, err
	})
	if err != nil {
		return fmt.Errorf("%s: %v (%s)", what, err, last)
	}
	return nil
}

// probe exercises what the manager does, each step within its deadline,
// and returns the first step that fails.
func probe(t *testing.T) error {
	ctx := context.Background()
	step := func(what string, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %v", what, err)
		}
		return nil
	}
	ns := newNamespace(t)
	cs := newCloneSet(ns, "probe", 2)
	cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	cs.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{claimTemplate("data", "1Gi")}
	sts := newAdvancedStatefulSet(ns, "probe-asts", 1, appsv1.ParallelPodManagement)
	csReady := func(replicas int32, image string) func(ctx context.Context) (bool, string, error) {
		return func(ctx context.Context) (bool, string, error) {
			got := &appsv1alpha1.CloneSet{}
			if err := k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(cs), got); err != nil {
				return false, err.Error(), nil
			}
			pods := &corev1.PodList{}
			if err := k8s.List(ctx, pods, ctrlclient.InNamespace(ns)); err != nil {
				return false, err.Error(), nil
			}
			n := 0
			for _, p := range pods.Items {
				if p.DeletionTimestamp == nil && p.Spec.Containers[0].Image == image && podCondition(&p, corev1.PodReady) == corev1.ConditionTrue {
					n++
				}
			}
			return got.Status.ObservedGeneration == got.Generation && got.Status.AvailableReplicas == replicas && n == int(replicas),
				fmt.Sprintf("%+v, %d ready on %s", got.Status, n, image), nil
		}
	}
	steps := []func() error{
		func() error {
			return within("metrics scraped", 10*time.Second, func(context.Context) (bool, string, error) {
				return metricAt(lifeline.MetricsURL, "controller_runtime_reconcile_total", nil) >= 0, "", nil
			})
		},
		func() error { return step("CloneSet created", k8s.Create(ctx, cs)) },
		func() error {
			return within("hook handlers published", 10*time.Second, func(ctx context.Context) (bool, string, error) {
				err := k8s.Get(ctx, ctrlclient.ObjectKey{Namespace: cluster.ManagerNamespace, Name: hookhandlers.ConfigMapName}, &corev1.ConfigMap{})
				return err == nil, fmt.Sprint(err), nil
			})
		},
		func() error {
			return within("CloneSet scaled up with claims", 30*time.Second, csReady(2, "nginx:1.27"))
		},
		func() error {
			return within("CloneSet status written", 10*time.Second, func(ctx context.Context) (bool, string, error) {
				got := &appsv1alpha1.CloneSet{}
				err := k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(cs), got)
				return err == nil && got.Status.UpdateRevision != "", fmt.Sprint(err), nil
			})
		},
		func() error {
			return step("CloneSet CRD's conversion CA replaced", breakConversionCA(ctx, "clonesets.apps.kruise.io"))
		},
		func() error {
			return within("conversion CA mended, v1alpha1 served", 30*time.Second, func(ctx context.Context) (bool, string, error) {
				if broken, err := conversionCABroken(ctx, "clonesets.apps.kruise.io"); err != nil || broken {
					return false, fmt.Sprintf("still broken (%v)", err), nil
				}
				err := k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(cs), &appsv1alpha1.CloneSet{})
				return err == nil, fmt.Sprint(err), nil
			})
		},
		func() error { return step("Advanced StatefulSet created", k8s.Create(ctx, sts)) },
		func() error {
			return within("Advanced StatefulSet scaled up, status written", 30*time.Second, func(ctx context.Context) (bool, string, error) {
				got := &appsv1beta1.StatefulSet{}
				err := k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(sts), got)
				return err == nil && got.Status.ReadyReplicas == 1 && got.Status.UpdateRevision != "", fmt.Sprintf("%v %+v", err, got.Status), nil
			})
		},
		func() error {
			return step("StatefulSet CRD's conversion CA replaced", breakConversionCA(ctx, "statefulsets.apps.kruise.io"))
		},
		func() error {
			return within("conversion CA mended, v1alpha1 StatefulSet served", 30*time.Second, func(ctx context.Context) (bool, string, error) {
				if broken, err := conversionCABroken(ctx, "statefulsets.apps.kruise.io"); err != nil || broken {
					return false, fmt.Sprintf("still broken (%v)", err), nil
				}
				err := k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(sts), &appsv1alpha1.StatefulSet{})
				return err == nil, fmt.Sprint(err), nil
			})
		},
		func() error {
			return step("in-place update requested", k8s.Patch(ctx, cs, ctrlclient.RawPatch("application/merge-patch+json",
				[]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"main","image":"nginx:1.28"}]}}}}`))))
		},
		func() error { return within("pods updated in place", 30*time.Second, csReady(2, "nginx:1.28")) },
		func() error {
			return step("CloneSet scaled in", k8s.Patch(ctx, cs, ctrlclient.RawPatch("application/merge-patch+json", []byte(`{"spec":{"replicas":1}}`))))
		},
		func() error { return within("a pod deleted", 30*time.Second, csReady(1, "nginx:1.28")) },
		func() error {
			zero := intstr.FromInt32(0)
			return step("budget created", k8s.Create(ctx, newBudget(ns, "probe", policyv1alpha1.PodUnavailableBudgetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "probe"}}, MaxUnavailable: &zero})))
		},
		func() error {
			return within("budget status and namespace protection", 20*time.Second, func(ctx context.Context) (bool, string, error) {
				b := &policyv1alpha1.PodUnavailableBudget{}
				nsObj := &corev1.Namespace{}
				if err := k8s.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "probe"}, b); err != nil {
					return false, err.Error(), nil
				}
				if err := k8s.Get(ctx, ctrlclient.ObjectKey{Name: ns}, nsObj); err != nil {
					return false, err.Error(), nil
				}
				return b.Status.CurrentAvailable == 1 && protection.Protected(nsObj.Labels, protection.Disruptions),
					fmt.Sprintf("%+v, labels %v", b.Status, nsObj.Labels), nil
			})
		},
		func() error {
			return within("protection event recorded", 10*time.Second, func(ctx context.Context) (bool, string, error) {
				// A cluster-scoped object's events go to the default namespace.
				events, err := client.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + ns})
				if err != nil {
					return false, err.Error(), nil
				}
				return slices.ContainsFunc(events.Items, func(e corev1.Event) bool { return e.Reason == "ProtectionOn" }), fmt.Sprintf("%d events", len(events.Items)), nil
			})
		},
		func() error {
			pods := &corev1.PodList{}
			if err := k8s.List(ctx, pods, ctrlclient.InNamespace(ns), ctrlclient.MatchingLabels{"app": "probe"}); err != nil || len(pods.Items) == 0 {
				return fmt.Errorf("eviction refused: no pod (%v)", err)
			}
			err := client.CoreV1().Pods(ns).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pods.Items[0].Name}})
			if !apierrors.IsTooManyRequests(err) {
				return fmt.Errorf("eviction refused: %v, want 429", err)
			}
			return nil
		},
		func() error {
			d := kruiseDeployment(ns, "probe-deploy", 1)
			d.Spec.Template.Labels["pub-controller"] = "false"
			d.Spec.Selector.MatchLabels["pub-controller"] = "false"
			if err := k8s.Create(ctx, d); err != nil {
				return step("Deployment created", err)
			}
			if err := k8s.Create(ctx, newBudget(ns, "probe-deploy", policyv1alpha1.PodUnavailableBudgetSpec{
				TargetReference: &policyv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name},
				MaxUnavailable:  ptr.To(intstr.FromInt32(0))})); err != nil {
				return step("Deployment budget created", err)
			}
			return within("a Deployment's budget counting its scale", 20*time.Second, func(ctx context.Context) (bool, string, error) {
				b := &policyv1alpha1.PodUnavailableBudget{}
				err := k8s.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "probe-deploy"}, b)
				return err == nil && b.Status.TotalReplicas == 1 && b.Status.CurrentAvailable == 1, fmt.Sprintf("%+v %v", b.Status, err), nil
			})
		},
		func() error {
			if err := k8s.Create(ctx, statefulSet(ns, "probe-sts", 1)); err != nil {
				return step("StatefulSet created", err)
			}
			pps := &appsv1alpha1.PersistentPodState{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe-sts"}, Spec: appsv1alpha1.PersistentPodStateSpec{
				TargetReference:            appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "probe-sts"},
				RequiredPersistentTopology: &appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{corev1.LabelTopologyZone}}}}
			if err := k8s.Create(ctx, pps); err != nil {
				return step("PersistentPodState created", err)
			}
			return within("a StatefulSet pod recorded", 30*time.Second, func(ctx context.Context) (bool, string, error) {
				got := &appsv1alpha1.PersistentPodState{}
				err := k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(pps), got)
				return err == nil && got.Status.PodStates["probe-sts-0"].NodeName != "", fmt.Sprintf("%+v %v", got.Status, err), nil
			})
		},
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return err
		}
	}
	return nil
}

// breakConversionCA puts the API server's own CA, which did not sign the
// manager's serving certificate, into a CRD's conversion webhook, as a
// re-applied manifest or a stale CA would leave it; the manager must mend it.
func breakConversionCA(ctx context.Context, name string) error {
	c, err := crdClient()
	if err != nil {
		return err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, ctrlclient.ObjectKey{Name: name}, crd); err != nil {
		return err
	}
	if crd.Spec.Conversion == nil || crd.Spec.Conversion.Webhook == nil || crd.Spec.Conversion.Webhook.ClientConfig == nil {
		return fmt.Errorf("%s has no conversion webhook: %+v", name, crd.Spec.Conversion)
	}
	ca, err := apiServerCA()
	if err != nil {
		return err
	}
	crd.Spec.Conversion.Webhook.ClientConfig.CABundle = ca
	return c.Update(ctx, crd)
}

func conversionCABroken(ctx context.Context, name string) (bool, error) {
	c, err := crdClient()
	if err != nil {
		return false, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, ctrlclient.ObjectKey{Name: name}, crd); err != nil {
		return false, err
	}
	ca, err := apiServerCA()
	if err != nil {
		return false, err
	}
	return bytes.Equal(crd.Spec.Conversion.Webhook.ClientConfig.CABundle, ca), nil
}

func apiServerCA() ([]byte, error) {
	cfg := rest.CopyConfig(local.Config)
	if err := rest.LoadTLSFiles(cfg); err != nil {
		return nil, err
	}
	return cfg.CAData, nil
}

func crdClient() (ctrlclient.Client, error) { return testenv.Client(local.Config) }
