package zktest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA is a throw-away certificate authority for TLS tests.
type CA struct {
	// CertFile is the CA certificate (PEM).
	CertFile string
	cert     *x509.Certificate
	key      *ecdsa.PrivateKey
	dir      string
	serial   int64
}

// NewCA creates a CA whose files live in dir.
func NewCA(dir, name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(48 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	ca := &CA{CertFile: filepath.Join(dir, name+"-ca.pem"), cert: cert, key: key, dir: dir, serial: 1}
	if err := writePEM(ca.CertFile, pem.Block{Type: "CERTIFICATE", Bytes: der}); err != nil {
		return nil, err
	}
	return ca, nil
}

// Pool returns a cert pool holding the CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// Issue creates a key pair signed by the CA, valid for the given DNS names
// and IPs (for server and client use), and writes cert and key as PEM.
// combined is one file with the key and the certificate, the form
// ZooKeeper's PEM key store reads.
func (ca *CA) Issue(name string, dns []string, ips []net.IP) (certFile, keyFile, combined string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", "", err
	}
	ca.serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(ca.serial), Subject: pkix.Name{CommonName: name},
		DNSNames: dns, IPAddresses: ips,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(48 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return "", "", "", err
	}
	kd, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", "", "", err
	}
	certFile = filepath.Join(ca.dir, name+".crt")
	keyFile = filepath.Join(ca.dir, name+".key")
	combined = filepath.Join(ca.dir, name+".pem")
	cb := pem.Block{Type: "CERTIFICATE", Bytes: der}
	kb := pem.Block{Type: "PRIVATE KEY", Bytes: kd}
	for _, w := range []struct {
		path   string
		blocks []pem.Block
	}{{certFile, []pem.Block{cb}}, {keyFile, []pem.Block{kb}}, {combined, []pem.Block{kb, cb}}} {
		if err := writePEM(w.path, w.blocks...); err != nil {
			return "", "", "", err
		}
	}
	return certFile, keyFile, combined, nil
}

// ClientTLS returns a client configuration trusting the CA, verifying
// serverName, presenting a certificate issued by the CA when withCert.
func (ca *CA) ClientTLS(serverName string, withCert bool) (*tls.Config, error) {
	cfg := &tls.Config{RootCAs: ca.Pool(), ServerName: serverName, MinVersion: tls.VersionTLS12}
	if withCert {
		c, k, _, err := ca.Issue(fmt.Sprintf("client-%d", ca.serial+1), nil, nil)
		if err != nil {
			return nil, err
		}
		pair, err := tls.LoadX509KeyPair(c, k)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

func writePEM(path string, blocks ...pem.Block) error {
	var out []byte
	for _, b := range blocks {
		out = append(out, pem.EncodeToMemory(&b)...)
	}
	return os.WriteFile(path, out, 0o600)
}

// tlsConfig returns the zoo.cfg lines of a TLS-enabled server whose
// certificate the CA issued for "localhost" and 127.0.0.1.
func (ca *CA) serverConfig(name, clientAuth string) (map[string]string, error) {
	_, _, combined, err := ca.Issue(name, []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		return nil, err
	}
	return map[string]string{
		// Netty is the only server connection factory that speaks TLS.
		"serverCnxnFactory":       "org.apache.zookeeper.server.NettyServerCnxnFactory",
		"ssl.keyStore.location":   combined,
		"ssl.keyStore.type":       "PEM",
		"ssl.trustStore.location": ca.CertFile,
		"ssl.trustStore.type":     "PEM",
		"ssl.clientAuth":          clientAuth,
	}, nil
}
