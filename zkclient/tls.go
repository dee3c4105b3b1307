package zkclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/zkconf/zkconf/internal/errlist"
)

// TLSFiles names the files of a TLS client configuration.
type TLSFiles struct {
	// CAFile holds the PEM certificates that may sign server certificates.
	CAFile string
	// CertFile and KeyFile, both or neither, are the client's certificate
	// and key for mutual TLS.
	CertFile, KeyFile string
	// ServerName is the name verified in server certificates. Empty: the
	// host name of each configured server (never the IP the client
	// resolved it to).
	ServerName string
}

// Enabled reports whether any TLS setting is present.
func (f TLSFiles) Enabled() bool { return f.CAFile != "" || f.CertFile != "" || f.KeyFile != "" }

// Load builds the TLS configuration, reporting every problem at once.
func (f TLSFiles) Load() (*tls.Config, error) {
	var errs []error
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: f.ServerName}
	if f.CAFile == "" {
		errs = append(errs, errors.New("TLS needs a CA file (the CAs that sign the ZooKeeper servers' certificates)"))
	} else if pem, err := os.ReadFile(f.CAFile); err != nil {
		errs = append(errs, fmt.Errorf("TLS CA file: %w", err))
	} else {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			errs = append(errs, fmt.Errorf("TLS CA file %s holds no PEM certificate", f.CAFile))
		}
		cfg.RootCAs = pool
	}
	switch {
	case (f.CertFile == "") != (f.KeyFile == ""):
		errs = append(errs, errors.New("TLS client certificate and key must be given together"))
	case f.CertFile != "":
		pair, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("TLS client certificate: %w", err))
		} else {
			cfg.Certificates = []tls.Certificate{pair}
		}
	}
	if err := errlist.Join(errs...); err != nil {
		return nil, err
	}
	return cfg, nil
}

// ErrTLS marks a TLS handshake that failed for a reason retrying cannot
// fix: an unknown CA, a certificate for another name, a refused client
// certificate.
var ErrTLS = errors.New("ZooKeeper TLS handshake failed")

// serverNames maps each resolved "ip:port" to the host name it was
// configured with, so certificates are verified against the name the
// operator wrote even though the client dials IPs.
func serverNames(servers []string) map[string]string {
	m := map[string]string{}
	for _, s := range servers {
		host, port, err := net.SplitHostPort(s)
		if err != nil {
			continue
		}
		m[s] = host
		addrs, err := net.LookupHost(host)
		if err != nil {
			continue
		}
		for _, a := range addrs {
			m[net.JoinHostPort(a, port)] = host
		}
	}
	return m
}

// handshake connects and exchanges one four-letter word. With TLS 1.3 a
// server that refuses the client's certificate says so only after the
// client's side of the handshake is done, so a reply must be read: any
// answer (or a plain close, when "ruok" is not whitelisted) means the TLS
// session was accepted.
func handshake(addr string, cfg *tls.Config) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return handshakeContext(ctx, addr, cfg)
}

// probeTLS makes one handshake with each server until one succeeds. It
// returns an ErrTLS error only when every server that answered refused the
// handshake for a certificate reason; unreachable servers are left to the
// client's retries (an agent must start while ZooKeeper is down).
func probeTLS(servers []string, cfg *tls.Config, names map[string]string) error {
	var certErr error
	for _, s := range servers {
		c := cfg.Clone()
		if c.ServerName == "" {
			c.ServerName = names[s]
		}
		err := handshake(s, c)
		if err == nil {
			return nil
		}
		var (
			verr *tls.CertificateVerificationError
			herr x509.HostnameError
			uerr x509.UnknownAuthorityError
			rerr tls.RecordHeaderError
			oerr *net.OpError
		)
		// A TLS alert from the server (a refused client certificate, say)
		// comes back as a net.OpError with Op "remote error".
		remote := errors.As(err, &oerr) && oerr.Op == "remote error"
		if remote || errors.As(err, &verr) || errors.As(err, &herr) || errors.As(err, &uerr) || errors.As(err, &rerr) {
			certErr = fmt.Errorf("%w with %s (verifying name %q): %v", ErrTLS, s, c.ServerName, err)
		}
	}
	return certErr
}
