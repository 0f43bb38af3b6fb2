package cluster

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Images are the programs Lifeline ships as container images.
var Images = []string{"lifeline-manager", "lifeline-bridge", "lifeline-node-agent"}

// ImageUser is the non-root user and group the images run as (distroless'
// "nonroot").
const ImageUser = "65532:65532"

// ImageOptions say how to build the images.
type ImageOptions struct {
	// Root is the repository; Out the folder the tarballs go to.
	Root, Out string
	// Registry prefixes the image names (ghcr.io/lifeline-k8s when empty);
	// Tag is their tag (the revision when empty).
	Registry, Tag string
	// Arch is the target architecture (the machine's when empty).
	Arch string
}

// BuildImages builds each image from the Go module alone, with no Docker
// daemon and no registry: a static binary (CGO off) in a single layer,
// nothing else (no shell, no package manager), run as a non-root user,
// labelled with the source revision, and dated at the revision's commit
// so that the same source gives the same image digest. Each is written as
// a tarball (docker load, ctr import, kind load image-archive) named
// <image>.tar in Out; it returns their paths.
func BuildImages(ctx context.Context, o ImageOptions) ([]string, error) {
	revision, date, err := gitRevision(ctx, o.Root)
	if err != nil {
		return nil, err
	}
	registry := o.Registry
	if registry == "" {
		registry = "ghcr.io/lifeline-k8s"
	}
	tag := o.Tag
	if tag == "" {
		tag = revision[:12]
	}
	arch := o.Arch
	if arch == "" {
		arch = goEnv(ctx, "GOARCH")
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	for _, image := range Images {
		bin, err := staticBinary(ctx, o.Root, o.Out, image, arch)
		if err != nil {
			return nil, err
		}
		img, err := imageOf(bin, image, arch, revision, date)
		if err != nil {
			return nil, err
		}
		ref, err := name.NewTag(registry + "/" + image + ":" + tag)
		if err != nil {
			return nil, err
		}
		path := filepath.Join(o.Out, image+".tar")
		if err := tarball.WriteToFile(path, ref, img); err != nil {
			return nil, fmt.Errorf("writing %s: %w", path, err)
		}
		os.Remove(bin)
		paths = append(paths, path)
	}
	return paths, nil
}

// staticBinary builds one command as a static Linux binary.
func staticBinary(ctx context.Context, root, out, image, arch string) (string, error) {
	bin := filepath.Join(out, image+".bin")
	b := build{root: root, pkg: "./cmd/" + image, arch: arch}
	return bin, b.to(ctx, bin)
}

// imageOf wraps a binary in a one-layer image: /<image>, and /tmp for the
// files the program writes (mount an emptyDir there under a read-only
// root filesystem).
func imageOf(bin, image, arch, revision string, date time.Time) (v1.Image, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	entries := []struct {
		hdr  tar.Header
		data []byte
	}{
		{tar.Header{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777}, nil},
		{tar.Header{Name: image, Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(data))}, data},
	}
	for _, e := range entries {
		e.hdr.ModTime = date
		if err := tw.WriteHeader(&e.hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return nil, err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = arch, "linux"
	cf.Created = v1.Time{Time: date}
	cf.Config.Entrypoint = []string{"/" + image}
	cf.Config.User = ImageUser
	cf.Config.WorkingDir = "/"
	cf.Config.Labels = map[string]string{
		"org.opencontainers.image.title":    image,
		"org.opencontainers.image.source":   "https://github.com/lifeline-k8s/lifeline",
		"org.opencontainers.image.revision": revision,
		"org.opencontainers.image.created":  date.UTC().Format(time.RFC3339),
		"org.opencontainers.image.licenses": "Apache-2.0",
	}
	return mutate.ConfigFile(img, cf)
}

// gitRevision is the checked-out commit, with "-dirty" when the tree has
// changes, and its commit time.
func gitRevision(ctx context.Context, root string) (string, time.Time, error) {
	out, err := exec.CommandContext(ctx, "git", "-C", root, "log", "-1", "--format=%H %ct").Output()
	if err != nil {
		return "", time.Time{}, fmt.Errorf("reading the revision: %w", err)
	}
	rev, secs, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	n, err := strconv.ParseInt(secs, 10, 64)
	if err != nil {
		return "", time.Time{}, err
	}
	if status, err := exec.CommandContext(ctx, "git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(status)) > 0 {
		rev += "-dirty"
	}
	return rev, time.Unix(n, 0).UTC(), nil
}

func goEnv(ctx context.Context, key string) string {
	out, _ := exec.CommandContext(ctx, "go", "env", key).Output()
	return strings.TrimSpace(string(out))
}

// UnpackImage reads an image tarball written by BuildImages, extracts its
// filesystem into dir and returns its config.
func UnpackImage(path, dir string) (*v1.ConfigFile, error) {
	img, err := tarball.ImageFromPath(path, nil)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return cf, nil
		}
		if err != nil {
			return nil, err
		}
		target := filepath.Join(dir, filepath.Clean("/"+hdr.Name))
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return nil, err
			}
		case tar.TypeReg:
			f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(hdr.Mode)&0o777)
			if err != nil {
				return nil, err
			}
			_, err = io.Copy(f, tr)
			f.Close()
			if err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("%s: unexpected entry type %c", hdr.Name, hdr.Typeflag)
		}
	}
}
