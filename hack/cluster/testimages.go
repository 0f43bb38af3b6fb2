package cluster

import (
	"context"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/lifeline-k8s/lifeline/hack/binaries"
)

// PauseImage is the real nodes' sandbox image: hack/testapp waiting for
// SIGTERM, so that no image has to be pulled from a registry.
const PauseImage = "lifeline.test/pause:1"

// TestAppVersions are the versions of the test application the real nodes
// hold (TestAppImage). "broken" never becomes ready.
var TestAppVersions = []string{"v1", "v2", "v3", "broken"}

// TestAppAlias is a second tag of version v1's image, for an update whose
// new tag resolves to the image the container already runs (the same image
// ID).
const TestAppAlias = "v1-again"

// TestAppImage is the image of one version of hack/testapp; pods use it
// with imagePullPolicy Never or IfNotPresent.
func TestAppImage(version string) string { return "lifeline.test/testapp:" + version }

// buildCNI builds hack/cni, the real nodes' pod network plugin.
func (c *Cluster) buildCNI(ctx context.Context, shared string) error {
	root, err := binaries.RepoRoot()
	if err != nil {
		return err
	}
	return build{root: root, pkg: "./hack/cni"}.to(ctx, filepath.Join(shared, "bin", "lifeline-cni"))
}

// buildTestImages writes one tarball holding the pause image and every
// version of the test application, all one layer (hack/testapp, static);
// the versions differ in their config alone, so each has its own image ID.
func (c *Cluster) buildTestImages(ctx context.Context, shared string) (string, error) {
	root, err := binaries.RepoRoot()
	if err != nil {
		return "", err
	}
	arch := goEnv(ctx, "GOARCH")
	bin := filepath.Join(shared, "bin", "testapp")
	if err := (build{root: root, pkg: "./hack/testapp", arch: arch}).to(ctx, bin); err != nil {
		return "", err
	}
	revision, date, err := gitRevision(ctx, root)
	if err != nil {
		return "", err
	}
	base, err := imageOf(bin, "testapp", arch, revision, date)
	if err != nil {
		return "", err
	}
	images := map[name.Reference]v1.Image{}
	add := func(ref string, edit func(*v1.Config)) error {
		cf, err := base.ConfigFile()
		if err != nil {
			return err
		}
		cf = cf.DeepCopy()
		edit(&cf.Config)
		img, err := mutate.ConfigFile(base, cf)
		if err != nil {
			return err
		}
		tag, err := name.NewTag(ref)
		if err != nil {
			return err
		}
		images[tag] = img
		return nil
	}
	if err := add(PauseImage, func(cfg *v1.Config) { cfg.Cmd = []string{"pause"} }); err != nil {
		return "", err
	}
	for _, v := range TestAppVersions {
		env := []string{"APP_VERSION=" + v}
		if v == "broken" {
			env = append(env, "NEVER_READY=1")
		}
		if err := add(TestAppImage(v), func(cfg *v1.Config) { cfg.Env = env }); err != nil {
			return "", err
		}
	}
	alias, err := name.NewTag(TestAppImage(TestAppAlias))
	if err != nil {
		return "", err
	}
	v1, err := name.NewTag(TestAppImage("v1"))
	if err != nil {
		return "", err
	}
	images[alias] = images[v1]
	path := filepath.Join(shared, "test-images.tar")
	return path, tarball.MultiRefWriteToFile(path, images)
}
