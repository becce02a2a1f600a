package plane

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"
)

// ClientCertFiles are a client certificate and the CA that issued it, as PEM files.
type ClientCertFiles struct {
	// CA is the issuing CA's certificate; Cert and Key the client's certificate and key.
	CA, Cert, Key string
}

// runtimeExtensionClientDir is where the plane keeps Cluster API's client certificate for the
// operator's Runtime Extension (Options.WithCAPI), under the state dir.
const runtimeExtensionClientDir = "runtime-extension-client"

// writeClientCert makes a CA and a client certificate with common name cn, valid for a day, and
// writes them into dir.
func writeClientCert(dir, cn string) (ClientCertFiles, error) {
	files := ClientCertFiles{CA: filepath.Join(dir, "ca.crt"), Cert: filepath.Join(dir, "tls.crt"), Key: filepath.Join(dir, "tls.key")}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return files, fmt.Errorf("plane: client certificate: %w", err)
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return files, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn + "-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return files, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return files, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return files, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: cn},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return files, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return files, err
	}
	for path, block := range map[string]*pem.Block{
		files.CA:   {Type: "CERTIFICATE", Bytes: caDER},
		files.Cert: {Type: "CERTIFICATE", Bytes: der},
		files.Key:  {Type: "EC PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			return files, fmt.Errorf("plane: client certificate: %w", err)
		}
	}
	return files, nil
}

// RuntimeExtensionClient is the client certificate Cluster API calls the operator's Runtime
// Extension with (Options.WithCAPI; zero otherwise): the operator serves only clients with a
// certificate of its CA (--runtime-extension-client-ca-file).
func (p *Plane) RuntimeExtensionClient() ClientCertFiles { return p.extClient }
