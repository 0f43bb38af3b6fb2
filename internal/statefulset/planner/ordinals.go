package planner

import (
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/workloadref"
)

// Ordinals is the range a set's pods take: from Start up to End
// (exclusive), skipping Reserved. Exactly spec.replicas ordinals are in it.
type Ordinals struct {
	Start, End int
	Reserved   sets.Set[int]
}

// OrdinalsOf is a set's range. spec.ordinals.start counts only with
// startOrdinal (OpenKruise's StatefulSetStartOrdinal gate, off by default
// there). A reserved range that does not parse reserves nothing, as in
// OpenKruise (its webhook refuses one).
func OrdinalsOf(set *appsv1beta1.StatefulSet, startOrdinal bool) Ordinals {
	o := Ordinals{Reserved: ReservedOrdinals(set.Spec.ReserveOrdinals)}
	if startOrdinal && set.Spec.Ordinals != nil {
		o.Start = int(set.Spec.Ordinals.Start)
	}
	o.End = o.Start
	for n := int(workloadref.Replicas(set.Spec.Replicas)); n > 0; o.End++ {
		if !o.Reserved.Has(o.End) {
			n--
		}
	}
	return o
}

// InRange reports whether ordinal ord is one of the set's.
func (o Ordinals) InRange(ord int) bool {
	return ord >= o.Start && ord < o.End && !o.Reserved.Has(ord)
}

// Each lists the ordinals in range, ascending.
func (o Ordinals) Each() []int {
	var out []int
	for ord := o.Start; ord < o.End; ord++ {
		if !o.Reserved.Has(ord) {
			out = append(out, ord)
		}
	}
	return out
}

// ReservedOrdinals reads reserveOrdinals: integers, and "a-b" ranges. Any
// element that does not parse makes the whole set empty, as OpenKruise's.
func ReservedOrdinals(r []intstr.IntOrString) sets.Set[int] {
	out := sets.New[int]()
	for _, e := range r {
		if e.Type == intstr.Int {
			out.Insert(int(e.IntVal))
			continue
		}
		a, b, ok := strings.Cut(e.StrVal, "-")
		start, err1 := strconv.Atoi(a)
		end, err2 := strconv.Atoi(b)
		if !ok || err1 != nil || err2 != nil || start > end {
			return sets.New[int]()
		}
		for i := start; i <= end; i++ {
			out.Insert(i)
		}
	}
	return out
}

// Ordinal is the ordinal of the set's pod named podName: <set>-<ordinal>.
func Ordinal(setName, podName string) (int, bool) {
	rest, ok := strings.CutPrefix(podName, setName+"-")
	if !ok || rest == "" || strings.ContainsFunc(rest, func(r rune) bool { return r < '0' || r > '9' }) {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil
}

// PodName is the name of the set's pod at ordinal ord.
func PodName(setName string, ord int) string { return setName + "-" + strconv.Itoa(ord) }
