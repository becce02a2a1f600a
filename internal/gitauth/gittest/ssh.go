package gittest

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// SSHKey returns a new PEM OpenSSH ed25519 private key (encrypted with passphrase if not empty)
// and its signer.
func SSHKey(t testing.TB, passphrase string) ([]byte, ssh.Signer) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var block *pem.Block
	if passphrase == "" {
		block, err = ssh.MarshalPrivateKey(priv, "")
	} else {
		block, err = ssh.MarshalPrivateKeyWithPassphrase(priv, "", []byte(passphrase))
	}
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(block), signer
}

// ServeSSH serves git-upload-pack (read only) for the repositories under root over SSH on
// loopback, with the given host key, to the user "git" authenticating with the client key only.
// It returns the listening address ("127.0.0.1:port"); the listener closes with the test.
func ServeSSH(t testing.TB, root string, hostKey ssh.Signer, client ssh.PublicKey) string {
	t.Helper()
	uploadPack := filepath.Join(Git(t, root, "--exec-path"), "git-upload-pack")
	return serveSSH(t, hostKey, client, func(ch ssh.Channel, path string) uint32 {
		cmd := exec.Command(uploadPack, filepath.Join(root, filepath.Clean("/"+path)))
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return 127
		}
		cmd.Stdout, cmd.Stderr = ch, ch.Stderr()
		if err := cmd.Start(); err != nil {
			return 127
		}
		go func() { _, _ = io.Copy(stdin, ch); _ = stdin.Close() }()
		if err := cmd.Wait(); err != nil {
			return 1
		}
		return 0
	})
}

// serveSSH accepts SSH connections on loopback as ServeSSH describes and calls run for each
// exec of "git-upload-pack '<path>'", with the session's channel; run returns the exit status.
func serveSSH(t testing.TB, hostKey ssh.Signer, client ssh.PublicKey, run func(ch ssh.Channel, path string) uint32) string {
	t.Helper()
	cfg := &ssh.ServerConfig{
		PublicKeyCallback: func(c ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
			if c.User() == "git" && bytes.Equal(k.Marshal(), client.Marshal()) {
				return nil, nil
			}
			return nil, errors.New("denied")
		},
	}
	cfg.AddHostKey(hostKey)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				_, chans, reqs, err := ssh.NewServerConn(conn, cfg)
				if err != nil {
					_ = conn.Close()
					return
				}
				go ssh.DiscardRequests(reqs)
				for nc := range chans {
					if nc.ChannelType() != "session" {
						_ = nc.Reject(ssh.UnknownChannelType, "session only")
						continue
					}
					ch, creqs, err := nc.Accept()
					if err != nil {
						continue
					}
					go serveSession(ch, creqs, run)
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// serveSession runs git-upload-pack for the one exec request of an SSH session.
func serveSession(ch ssh.Channel, reqs <-chan *ssh.Request, run func(ch ssh.Channel, path string) uint32) {
	defer func() { _ = ch.Close() }()
	for req := range reqs {
		if req.Type != "exec" {
			_ = req.Reply(false, nil)
			continue
		}
		var p struct{ Command string }
		if err := ssh.Unmarshal(req.Payload, &p); err != nil || !strings.HasPrefix(p.Command, "git-upload-pack ") {
			_ = req.Reply(false, nil)
			return
		}
		_ = req.Reply(true, nil)
		path := strings.Trim(strings.TrimPrefix(p.Command, "git-upload-pack "), "'")
		status := run(ch, path)
		_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{status}))
		return
	}
}
