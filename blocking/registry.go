package blocking

// Codes raised when a registry cannot be reached or refuses the client:
// credentials, permissions, the network and TLS. Their text names the
// registry host only, never the transport's own message.
const (
	RegistryUnauthorized Code = "registry_unauthorized"
	RegistryForbidden    Code = "registry_forbidden"
	RegistryUnreachable  Code = "registry_unreachable"
	RegistryTLSUntrusted Code = "registry_tls_untrusted"
	RegistryCAInvalid    Code = "registry_ca_invalid"
)

func init() {
	register(
		Entry{RegistryUnauthorized, StageOCI, "the registry needs credentials that were not given or were refused",
			"Log in to the registry with `docker login HOST` or `oras login HOST`; oa reads the credentials they store in the Docker config (~/.docker/config.json, or $DOCKER_CONFIG/config.json) and its credential helpers. Check the user name and password or token if you are logged in already."},
		Entry{RegistryForbidden, StageOCI, "the registry denies this account access",
			"The credentials are valid but the account may not read (or write) this repository. Ask the registry's owner for access, or log in as another account with `docker login HOST` / `oras login HOST` (stored in ~/.docker/config.json)."},
		Entry{RegistryUnreachable, StageOCI, "the registry cannot be reached",
			"Check the host and port, that the registry is running and that the network reaches it. A registry that serves plain HTTP needs --plain-http; one that serves HTTPS on loopback needs --plain-http=false. Nothing was changed."},
		Entry{RegistryTLSUntrusted, StageOCI, "the registry's TLS certificate is not trusted",
			"Trust the CA that issued the registry's certificate with --ca-file CA.pem (or install it in the system roots). For a self-signed test registry only, pass --insecure. If the registry serves plain HTTP, pass --plain-http."},
		Entry{RegistryCAInvalid, StageOCI, "the --ca-file is not a readable PEM certificate file",
			"Pass --ca-file a regular file of PEM-encoded CA certificates (-----BEGIN CERTIFICATE-----), at most 1 MiB."},
	)
}
