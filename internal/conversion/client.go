package conversion

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The CRDs store v1beta1, the hub. The controllers are written against
// v1alpha1; reading that version from the API server would send every
// watch event through the conversion webhook, making the controllers
// depend on their own webhook and pay a network hop per object. HubClient
// and HubReader read and write the hub instead and convert in process, with
// the same functions the webhook serves. The manager's cache therefore
// holds hub objects only: watch the hub types (For, Owns, Watches).

// HubClient wraps c so that the v1alpha1 kinds this package converts are
// read and written as v1beta1.
func HubClient(c client.Client) client.Client { return &hubClient{Client: c} }

// HubReader is HubClient for a reader (the manager's API reader).
func HubReader(r client.Reader) client.Reader { return &hubReader{reader: r} }

type hubClient struct{ client.Client }

type hubReader struct{ reader client.Reader }

func (r *hubReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return get(ctx, r.reader, key, obj, opts...)
}

func (r *hubReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return listHub(ctx, r.reader, list, opts...)
}

func (c *hubClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return get(ctx, c.Client, key, obj, opts...)
}

func (c *hubClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return listHub(ctx, c.Client, list, opts...)
}

func (c *hubClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return write(obj, func(o client.Object) error { return c.Client.Create(ctx, o, opts...) })
}

func (c *hubClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return write(obj, func(o client.Object) error { return c.Client.Update(ctx, o, opts...) })
}

// Patch sends the patch as it is: it must address fields that both
// versions spell the same (metadata, spec.scaleStrategy.podsToDelete).
func (c *hubClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return write(obj, func(o client.Object) error { return c.Client.Patch(ctx, o, patch, opts...) })
}

func (c *hubClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	return write(obj, func(o client.Object) error { return c.Client.Delete(ctx, o, opts...) })
}

func (c *hubClient) Status() client.SubResourceWriter { return &hubStatus{w: c.Client.Status()} }

func (c *hubClient) SubResource(name string) client.SubResourceClient {
	if name != "status" {
		return c.Client.SubResource(name)
	}
	return &hubStatus{w: c.Client.SubResource(name)}
}

type hubStatus struct{ w client.SubResourceWriter }

func (s *hubStatus) Get(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceGetOption) error {
	rc, ok := s.w.(client.SubResourceClient)
	if !ok {
		return fmt.Errorf("status writer cannot read")
	}
	return read(obj, func(o client.Object) error { return rc.Get(ctx, o, sub, opts...) })
}

func (s *hubStatus) Create(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceCreateOption) error {
	return write(obj, func(o client.Object) error { return s.w.Create(ctx, o, sub, opts...) })
}

func (s *hubStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return write(obj, func(o client.Object) error { return s.w.Update(ctx, o, opts...) })
}

func (s *hubStatus) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	return write(obj, func(o client.Object) error { return s.w.Patch(ctx, o, patch, opts...) })
}

func (s *hubStatus) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	return s.w.Apply(ctx, obj, opts...)
}

func get(ctx context.Context, r client.Reader, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return read(obj, func(o client.Object) error { return r.Get(ctx, key, o, opts...) })
}

// read runs do on the hub form of obj, if it has one, and converts the
// result into obj.
func read(obj client.Object, do func(client.Object) error) error {
	hub := HubOf(obj)
	if hub == nil {
		return do(obj)
	}
	if err := do(hub); err != nil {
		return err
	}
	return Convert(hub, obj)
}

// write converts obj to its hub form, runs do on it, and converts what the
// API server returned back into obj.
func write(obj client.Object, do func(client.Object) error) error {
	hub := HubOf(obj)
	if hub == nil {
		return do(obj)
	}
	if err := Convert(obj, hub); err != nil {
		return err
	}
	if err := do(hub); err != nil {
		return err
	}
	return Convert(hub, obj)
}
