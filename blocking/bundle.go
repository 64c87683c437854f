package blocking

// Codes raised while reading the files of a bundle folder, before any of
// their bytes are believed: a bundle may come from anyone, and compiling it
// must neither leave its folder, block, nor read without bound.
const (
	BundleLinkEscapes    Code = "bundle_link_escapes"
	BundleFileNotRegular Code = "bundle_file_not_regular"
	BundleFileTooLarge   Code = "bundle_file_too_large"
	BundleTooLarge       Code = "bundle_too_large"
)

func init() {
	register(
		Entry{BundleLinkEscapes, StageCompile, "a symbolic link in the bundle leads outside the bundle folder",
			"A bundle is compiled only from files inside its folder: copy the file into the bundle instead of linking to it. A link that stays inside the folder and names a regular file is followed."},
		Entry{BundleFileNotRegular, StageCompile, "a bundle file is not a regular file",
			"The .cue files and skills/*.md of a bundle must be regular files (not a named pipe, device, socket, folder or a link to nothing); replace it with a regular file or remove it."},
		Entry{BundleFileTooLarge, StageCompile, "a bundle file is larger than the limit",
			"Each .cue file and skill doc of a bundle may hold at most 1 MiB (compiler.MaxBundleFileBytes); split the file or shorten it. A package carries method, not data."},
		Entry{BundleTooLarge, StageCompile, "the bundle is larger than the limit",
			"A bundle's .cue files and skills/*.md together may hold at most 4 MiB (compiler.MaxBundleBytes) in at most 256 files (compiler.MaxBundleFiles); remove what the worker does not need."},
	)
}
