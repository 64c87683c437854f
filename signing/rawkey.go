package signing

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"

	"github.com/secure-systems-lab/go-securesystemslib/encrypted"
	"github.com/sigstore/cosign/v2/pkg/cosign"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/oa-dev/oa/blocking"
)

// DecryptPrivateKey opens a cosign private key file with password, as
// LoadSigner does (scrypt and secretbox, through the library cosign uses),
// and returns the key's PKCS #8 DER: for a caller that keeps its own
// sealed copy of a key it must load often (see SignerFromPKCS8). The DER
// is the secret key itself; it must never be written anywhere unsealed.
//
// Like LoadSigner, it remembers what it decrypted for the life of the
// process (keyed by the exact bytes and password) and hands back a copy.
func DecryptPrivateKey(privatePEM, password []byte) ([]byte, error) {
	der, err := decryptedKeys.open(privatePEM, password, decryptPrivateKey)
	if err != nil {
		return nil, err
	}
	// A copy, so that a caller that clears its key does not clear ours.
	return bytes.Clone(der), nil
}

// decryptedKeys holds the PKCS #8 DER DecryptPrivateKey decrypted.
var decryptedKeys keyMemo[[]byte]

// decryptPrivateKey decrypts privatePEM with password, every time.
func decryptPrivateKey(privatePEM, password []byte) ([]byte, error) {
	if err := checkPrivatePEM(privatePEM); err != nil {
		return nil, err
	}
	block, _ := pem.Decode(privatePEM)
	der, err := encrypted.Decrypt(block.Bytes, password)
	if err != nil {
		return nil, classifyKeyError(err)
	}
	if _, err := x509.ParsePKCS8PrivateKey(der); err != nil {
		return nil, blocking.New(blocking.KeyInvalid, "the private key cannot be decrypted or parsed")
	}
	return der, nil
}

// SignerFromPKCS8 makes a Signer of a PKCS #8 DER private key, loaded with
// cosign's default options exactly as LoadSigner loads a decrypted key,
// without any key derivation.
func SignerFromPKCS8(der []byte) (*Signer, error) {
	pk, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, blocking.New(blocking.KeyInvalid, "the private key is not PKCS #8")
	}
	sv, err := signature.LoadDefaultSignerVerifier(pk, *cosign.GetDefaultLoadOptions(nil)...)
	if err != nil {
		return nil, blocking.New(blocking.KeyInvalid, "the private key type is not supported")
	}
	return signerOf(sv)
}
