package bridge

import (
	"fmt"
	"os"
	"strings"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateSecurity checks that TLS goes with https:// endpoints and that
// every file named can be read, so a bridge missing its Secret fails at
// start with the file's field, not at its first registration.
func (e *EtcdConfig) validateSecurity(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ep := range e.Endpoints {
		if e.TLS != nil && !strings.HasPrefix(ep, "https://") {
			errs = append(errs, field.Invalid(p.Child("endpoints").Index(i), ep, "tls is set: the endpoint must be https://"))
		}
	}
	readable := func(p *field.Path, path string) {
		if path == "" {
			return
		}
		if _, err := os.ReadFile(path); err != nil {
			errs = append(errs, field.Invalid(p, path, err.Error()))
		}
	}
	if t := e.TLS; t != nil {
		tp := p.Child("tls")
		readable(tp.Child("caFile"), t.CAFile)
		readable(tp.Child("certFile"), t.CertFile)
		readable(tp.Child("keyFile"), t.KeyFile)
		if (t.CertFile == "") != (t.KeyFile == "") {
			errs = append(errs, field.Invalid(tp.Child("keyFile"), t.KeyFile, "a client certificate needs its key, and a key its certificate"))
		}
	}
	readable(p.Child("usernameFile"), e.UsernameFile)
	readable(p.Child("passwordFile"), e.PasswordFile)
	if (e.UsernameFile == "") != (e.PasswordFile == "") {
		errs = append(errs, field.Invalid(p.Child("passwordFile"), e.PasswordFile, "set usernameFile and passwordFile together"))
	}
	return errs
}

// clientConfig is the etcd client's configuration: endpoints, TLS and the
// user, read from their files now.
func (e *EtcdConfig) clientConfig() (clientv3.Config, error) {
	cfg := clientv3.Config{Endpoints: e.Endpoints, DialTimeout: e.DialTimeout.Duration}
	if t := e.TLS; t != nil {
		info := transport.TLSInfo{TrustedCAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile, ServerName: t.ServerName}
		var err error
		if cfg.TLS, err = info.ClientConfig(); err != nil {
			return cfg, fmt.Errorf("etcd.tls: %w", err)
		}
	}
	if e.UsernameFile != "" {
		user, err := os.ReadFile(e.UsernameFile)
		if err != nil {
			return cfg, err
		}
		password, err := os.ReadFile(e.PasswordFile)
		if err != nil {
			return cfg, err
		}
		cfg.Username, cfg.Password = strings.TrimSpace(string(user)), strings.TrimSpace(string(password))
	}
	return cfg, nil
}
