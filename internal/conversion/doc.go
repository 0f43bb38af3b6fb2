// Package conversion converts Lifeline's kinds between the versions they are
// served in: v1alpha1 and v1beta1 of CloneSet, PersistentPodState and
// PodUnavailableBudget. v1beta1 is the hub, as in OpenKruise's Go module
// v1.9.0. Each function is pure and leaves its source untouched, so the same
// code serves the conversion webhook, the tests and any in-process caller.
//
// The rules are OpenKruise's (apis/*/v1alpha1/*_conversion.go at v1.9.0),
// checked against vectors recorded from its own code (testdata), with two
// repairs, both listed in docs/compatibility.md:
//
//   - OpenKruise's CloneSet ConvertFrom writes the image pre-download
//     annotations into the map its source still holds; here every map is
//     copied first.
//   - A v1beta1 field v1alpha1 has no place for (CloneSet
//     scaleStrategy.excludePreparingDelete without its label, budget
//     spec.ignoredPodSelector) is lost by OpenKruise whenever a v1alpha1
//     client reads and writes the object back. Here it rides in the
//     annotation StashAnnotation of the v1alpha1 form and is restored from
//     it, as Kubernetes and Cluster API do for their own lossy conversions.
package conversion
