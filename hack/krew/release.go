package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"text/template"
)

// Release builds an archive per platform (os/arch) into out and renders
// root's .krew.yaml for tag into out/lifeline.yaml; it returns that path.
// A platform the manifest names but that was not built is an error: the
// manifest would point at an archive nobody made.
func Release(ctx context.Context, root, tag, out string, platforms []string) (string, error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	sums := map[string]string{}
	for _, p := range platforms {
		goos, goarch, ok := strings.Cut(p, "/")
		if !ok {
			return "", fmt.Errorf("platform %q: want os/arch", p)
		}
		name, sum, err := archive(ctx, root, out, goos, goarch)
		if err != nil {
			return "", err
		}
		sums[name] = sum
	}
	tmpl, err := os.ReadFile(filepath.Join(root, ".krew.yaml"))
	if err != nil {
		return "", err
	}
	manifest, err := render(string(tmpl), tag, sums)
	if err != nil {
		return "", err
	}
	dst := filepath.Join(out, "lifeline.yaml")
	return dst, os.WriteFile(dst, manifest, 0o644)
}

// render fills krew-release-bot's template: {{ .TagName }}, and
// {{addURIAndSha "URL" .TagName}} as the uri and sha256 lines of the
// archive the URL names. Only platforms in sums may be named.
func render(tmpl, tag string, sums map[string]string) ([]byte, error) {
	funcs := template.FuncMap{"addURIAndSha": func(url, tag string) (string, error) {
		url = strings.ReplaceAll(url, "{{ .TagName }}", tag)
		sum, ok := sums[path.Base(url)]
		if !ok {
			return "", fmt.Errorf("%s: no archive of that platform was built", path.Base(url))
		}
		return fmt.Sprintf("uri: %s\n    sha256: %s", url, sum), nil
	}}
	t, err := template.New(".krew.yaml").Funcs(funcs).Parse(tmpl)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, map[string]string{"TagName": tag}); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// archive builds kubectl-lifeline for goos/goarch in its own module and
// packs it as out/kubectl-lifeline_<os>_<arch>.tar.gz; it returns the
// archive's name and sha256.
func archive(ctx context.Context, root, out, goos, goarch string) (string, string, error) {
	bin := "kubectl-lifeline"
	if goos == "windows" {
		bin += ".exe"
	}
	// A folder of the repository's build output per platform, kept: go
	// build skips the link of a binary already up to date there, and make
	// test's check of the manifest builds this platform's twice.
	tmp := filepath.Join(root, "bin", "builds", "krew-"+goos+"-"+goarch)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return "", "", err
	}
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(tmp, bin), ".")
	build.Dir = filepath.Join(root, "cmd", "kubectl-lifeline")
	build.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
	if o, err := build.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("building for %s/%s: %v\n%s", goos, goarch, err, o)
	}
	data, err := os.ReadFile(filepath.Join(tmp, bin))
	if err != nil {
		return "", "", err
	}
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Name: bin, Mode: 0o755, Size: int64(len(data))}); err != nil {
		return "", "", err
	}
	if _, err := tw.Write(data); err != nil {
		return "", "", err
	}
	if err := tw.Close(); err != nil {
		return "", "", err
	}
	if err := gz.Close(); err != nil {
		return "", "", err
	}
	name := fmt.Sprintf("kubectl-lifeline_%s_%s.tar.gz", goos, goarch)
	sum := sha256.Sum256(b.Bytes())
	return name, hex.EncodeToString(sum[:]), os.WriteFile(filepath.Join(out, name), b.Bytes(), 0o644)
}
