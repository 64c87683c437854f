package blocking

// Codes raised when bytes from a registry, an OCI layout or an output
// folder cannot be trusted enough to be read or written.
const (
	LayerTooLarge      Code = "layer_too_large"
	ManifestTooLarge   Code = "manifest_too_large"
	LayoutInvalid      Code = "layout_invalid"
	PullOutputNotOwned Code = "pull_output_not_owned"
)

func init() {
	register(
		Entry{LayerTooLarge, StageOCI, "a layer is larger than this host reads",
			"Nothing was read past the limit: the layer's descriptor (or the bytes sent for it) exceeds the size limit for its media type. If the artifact is genuine and must be this large, raise the limit in the host policy's `limits` section (for example `limits: component_bytes: 536870912`); otherwise do not trust the source."},
		Entry{ManifestTooLarge, StageOCI, "a manifest is larger than this host reads",
			"Nothing was read past the limit: the manifest or index (or the bytes sent for it) exceeds the manifest size limit. oa and cosign write manifests of a few KiB; raise `limits: manifest_bytes` in the host policy only if a genuine manifest is this large."},
		Entry{LayoutInvalid, StageOCI, "the OCI image layout is malformed",
			"The named file or index.json entry of the layout is not what the OCI image-layout spec allows (a missing or oversized index.json, an entry without a valid digest or size, a blob that is not a regular file). Recreate the layout with `oa push --oci-layout` or `oras copy --to-oci-layout`."},
		Entry{PullOutputNotOwned, StageOCI, "the output folder was not written by oa pull",
			"Nothing was written: -o names a folder that is not empty and has no .oa-pull marker, or holds a symbolic link. Choose a new folder, or remove the folder first if its contents can be discarded."},
	)
}
