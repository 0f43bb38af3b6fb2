package conversion

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crconversion "sigs.k8s.io/controller-runtime/pkg/webhook/conversion"
)

// pair is one kind's conversion between its spoke version (v1alpha1) and
// its hub (v1beta1, stored). Each kind registers its own, in its file;
// Convert, HubOf, the hub client's lists and the webhook read them here.
type pair struct {
	newSpoke, newHub func() client.Object
	newHubList       func() client.ObjectList
	toHub, fromHub   func(src, dst runtime.Object) error
	webhook          func(*runtime.Scheme) (crconversion.Converter, error)
}

var (
	bySpoke     = map[reflect.Type]*pair{}
	byHub       = map[reflect.Type]*pair{}
	bySpokeList = map[reflect.Type]*pair{}
	converters  = map[schema.GroupKind]func(*runtime.Scheme) (crconversion.Converter, error){}
)

// register adds kind gk's conversion, from its pure functions.
func register[S, H client.Object](gk schema.GroupKind, spoke S, hub H, spokeList, hubList client.ObjectList, toHub func(S, H) error, fromHub func(H, S) error) {
	p := &pair{
		newSpoke:   func() client.Object { return fresh(spoke) },
		newHub:     func() client.Object { return fresh(hub) },
		newHubList: func() client.ObjectList { return fresh(hubList) },
		toHub:      func(src, dst runtime.Object) error { return toHub(src.(S), dst.(H)) },
		fromHub:    func(src, dst runtime.Object) error { return fromHub(src.(H), dst.(S)) },
	}
	bySpoke[reflect.TypeOf(spoke)] = p
	byHub[reflect.TypeOf(hub)] = p
	bySpokeList[reflect.TypeOf(spokeList)] = p
	converters[gk] = crconversion.NewHubSpokeConverter(hub, crconversion.NewSpokeConverter(spoke,
		func(_ context.Context, h H, s S) error { return fromHub(h, s) }, func(_ context.Context, s S, h H) error { return toHub(s, h) }))
}

// fresh is a new empty object of v's (pointer) type.
func fresh[T any](v T) T { return reflect.New(reflect.TypeOf(v).Elem()).Interface().(T) }

// Convert converts src into dst, which must be the same kind in the other
// version; the conversion webhook and the tests go through it.
func Convert(src, dst runtime.Object) error {
	if p, ok := bySpoke[reflect.TypeOf(src)]; ok && reflect.TypeOf(dst) == reflect.TypeOf(p.newHub()) {
		return p.toHub(src, dst)
	}
	if p, ok := byHub[reflect.TypeOf(src)]; ok && reflect.TypeOf(dst) == reflect.TypeOf(p.newSpoke()) {
		return p.fromHub(src, dst)
	}
	return fmt.Errorf("no conversion from %T to %T", src, dst)
}

// HubOf returns an empty hub object of obj's kind when obj is a v1alpha1
// object this package converts, else nil.
func HubOf(obj runtime.Object) client.Object {
	if p, ok := bySpoke[reflect.TypeOf(obj)]; ok {
		return p.newHub()
	}
	return nil
}

// listHub lists a v1alpha1 list as its hub and converts the items; any
// other list is listed as it is.
func listHub(ctx context.Context, r client.Reader, list client.ObjectList, opts ...client.ListOption) error {
	p, ok := bySpokeList[reflect.TypeOf(list)]
	if !ok {
		return r.List(ctx, list, opts...)
	}
	hub := p.newHubList()
	if err := r.List(ctx, hub, opts...); err != nil {
		return err
	}
	items, err := meta.ExtractList(hub)
	if err != nil {
		return err
	}
	spokes := make([]runtime.Object, len(items))
	for i, item := range items {
		spokes[i] = p.newSpoke()
		if err := p.fromHub(item, spokes[i]); err != nil {
			return err
		}
	}
	if l, ok := list.(metav1.ListInterface); ok {
		l.SetResourceVersion(hub.GetResourceVersion())
		l.SetContinue(hub.GetContinue())
		l.SetRemainingItemCount(hub.GetRemainingItemCount())
	}
	return meta.SetList(list, spokes)
}
