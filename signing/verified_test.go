package signing

import (
	"bytes"
	"testing"
)

// TestVerifyBytesRemembersOnlySuccesses: a signature that verified is
// answered from memory after, and only for the same key, signature and
// message; a failure is never remembered, and a message or signature
// changed after a success still fails. LoadVerifier gives the key it
// parsed before for the same PEM.
func TestVerifyBytesRemembersOnlySuccesses(t *testing.T) {
	newSigner := func() *Signer {
		kp, err := csGenerate()
		if err != nil {
			t.Fatal(err)
		}
		return kp.signer
	}
	one, other := newSigner(), newSigner()
	msg := []byte(`{"seq":1}`)
	sig, err := one.SignBytes(msg)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := one.Verifier().PublicPEM()
	if err != nil {
		t.Fatal(err)
	}
	ver, err := LoadVerifier(pem)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := LoadVerifier(bytes.Clone(pem)); again != ver {
		t.Fatal("the same PEM was parsed again")
	}
	if err := ver.VerifyBytes(sig, []byte(`{"seq":2}`)); err == nil {
		t.Fatal("a signature verified over another message")
	}
	for range 2 {
		if err := ver.VerifyBytes(sig, msg); err != nil {
			t.Fatalf("the signature did not verify: %v", err)
		}
	}
	if _, ok := verified.Get(verifiedID(ver.KeyID(), sig, msg)); !ok {
		t.Fatal("the success was not remembered")
	}
	if err := ver.VerifyBytes(sig, []byte(`{"seq":2}`)); err == nil {
		t.Fatal("after a success, a signature verified over another message")
	}
	bad := bytes.Clone(sig)
	bad[len(bad)-1] ^= 1
	if err := ver.VerifyBytes(bad, msg); err == nil {
		t.Fatal("after a success, a changed signature verified")
	}
	if err := other.Verifier().VerifyBytes(sig, msg); err == nil {
		t.Fatal("another key verified the remembered signature")
	}
}

// What a signer signs is known to verify with its own public key, and
// with nothing else: the read back of a record just signed (the
// checkpoint the next seal extends) is not verified again.
func TestSignBytesRemembersWhatItSigned(t *testing.T) {
	kp, err := csGenerate()
	if err != nil {
		t.Fatal(err)
	}
	other, err := csGenerate()
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte(`{"seq":7}`)
	sig, err := kp.signer.SignBytes(msg)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := verified.Get(verifiedID(kp.signer.KeyID(), sig, msg)); !ok {
		t.Fatal("the signature just made was not remembered as verified")
	}
	if err := kp.signer.Verifier().VerifyBytes(sig, msg); err != nil {
		t.Fatalf("the signature did not verify: %v", err)
	}
	if err := other.signer.Verifier().VerifyBytes(sig, msg); err == nil {
		t.Fatal("another key verified the signature")
	}
	if err := kp.signer.Verifier().VerifyBytes(sig, []byte(`{"seq":8}`)); err == nil {
		t.Fatal("the signature verified over another message")
	}
}
