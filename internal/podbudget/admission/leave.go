package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"

	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/podbudget/workload"
)

// A pod update that leaves its spec alone can still take the pod out of
// the budgets covering it, and so out of their protection: a new label set
// a budget's selector no longer matches, a controller reference to a
// workload that does not exist (the garbage collector then deletes the
// pod, and a delete of a pod whose workload is gone costs no budget), or
// the no-protect annotation. Such an update is judged as the disruption it
// leads to, an UPDATE charged to the budgets it leaves, unless its user
// may edit those budgets (update them), as a platform team may: OpenKruise
// v1.9 finds a pod's budget by its related-pub annotation and so keeps a
// relabelled pod guarded; Lifeline finds budgets by their selectors, and
// without this a team that may patch pods but not edit budgets could undo
// the platform's budget (issue 41; a deviation, in the README's table).

// Exit is what a metadata-only update would take a pod out of.
type Exit struct {
	Budgets []*policyv1alpha1.PodUnavailableBudget
	// Why says how the update takes the pod out of them.
	Why string
}

// exit reads which of the budgets covering old the update to updated
// takes the pod out of; a zero Exit when none.
func (g *Guard) exit(ctx context.Context, old, updated *corev1.Pod) (Exit, error) {
	before, err := g.budgetsOf(ctx, old)
	if err != nil || len(before) == 0 {
		return Exit{}, err
	}
	if noProtect(updated) && !noProtect(old) {
		return Exit{Budgets: before, Why: "it sets " + policyv1alpha1.PodPubNoProtectionAnnotation}, nil
	}
	oldRef, newRef := metav1.GetControllerOf(old), metav1.GetControllerOf(updated)
	if newRef != nil && !sameController(oldRef, newRef) && workload.Gone(ctx, g.Cache, g.Live, old.Namespace, *newRef) {
		return Exit{Budgets: before, Why: fmt.Sprintf("its new controller %s %s does not exist, so the garbage collector would delete it", newRef.Kind, newRef.Name)}, nil
	}
	after, err := g.budgetsOf(ctx, updated)
	if err != nil {
		return Exit{}, err
	}
	left := Left(before, after)
	if len(left) == 0 {
		return Exit{}, nil
	}
	return Exit{Budgets: left, Why: "its new labels or controller no longer match"}, nil
}

// Left is the budgets of before that are not in after.
func Left(before, after []*policyv1alpha1.PodUnavailableBudget) []*policyv1alpha1.PodUnavailableBudget {
	var out []*policyv1alpha1.PodUnavailableBudget
	for _, b := range before {
		stays := false
		for _, a := range after {
			stays = stays || a.UID == b.UID && a.Name == b.Name
		}
		if !stays {
			out = append(out, b)
		}
	}
	return out
}

func noProtect(pod *corev1.Pod) bool {
	return pod.Annotations[policyv1alpha1.PodPubNoProtectionAnnotation] == "true"
}

func sameController(a, b *metav1.OwnerReference) bool {
	return a != nil && b != nil && a.UID == b.UID && a.Kind == b.Kind && a.Name == b.Name && a.APIVersion == b.APIVersion
}

func names(budgets []*policyv1alpha1.PodUnavailableBudget) string {
	n := make([]string, len(budgets))
	for i, b := range budgets {
		n[i] = "PodUnavailableBudget " + b.Name
	}
	return strings.Join(n, ", ")
}

// reviewTTL is how long an answer of the API server on whether a user may
// edit a budget is reused: a relabelling storm by one user asks once per
// budget, not once per pod, and a right granted or revoked counts within
// it (the API server's own webhook authorizer reuses answers longer).
const reviewTTL = 10 * time.Second

// mayEdit reports whether user may update every one of budgets, asked of
// the API server (a SubjectAccessReview each, answers reused for
// reviewTTL): who may change a budget may as well take a pod out of it.
func (g *Guard) mayEdit(ctx context.Context, user authenticationv1.UserInfo, budgets []*policyv1alpha1.PodUnavailableBudget) (bool, error) {
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	who, err := json.Marshal(user)
	if err != nil {
		return false, err
	}
	answers := g.reviewAnswers()
	for _, b := range budgets {
		key := string(who) + "\x00" + b.Namespace + "/" + b.Name
		if allowed, ok := answers.Get(key); ok {
			if !allowed.(bool) {
				return false, nil
			}
			continue
		}
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user.Username, Groups: user.Groups, UID: user.UID, Extra: extra,
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: b.Namespace, Verb: "update", Group: policyv1alpha1.GroupVersion.Group, Resource: "podunavailablebudgets", Name: b.Name,
			},
		}}
		if err := g.Writer.Create(ctx, review); err != nil {
			return false, fmt.Errorf("asking whether %s may edit PodUnavailableBudget %s: %w", user.Username, b.Name, err)
		}
		answers.Add(key, review.Status.Allowed, reviewTTL)
		if !review.Status.Allowed {
			return false, nil
		}
	}
	return true, nil
}

func (g *Guard) reviewAnswers() *cache.LRUExpireCache {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.reviews == nil {
		g.reviews = cache.NewLRUExpireCache(1000)
	}
	return g.reviews
}
