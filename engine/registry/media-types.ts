/**
 * Media types the registry knows. Only Docker image manifest v2 schema 2 is accepted for push
 * (docs/rules.md Endpoints 8.4 and Limits 10: "container manifest v2 schema 2 only").
 */
export const MANIFEST_V2S2 = 'application/vnd.docker.distribution.manifest.v2+json';
export const MANIFEST_LIST_V2 = 'application/vnd.docker.distribution.manifest.list.v2+json';
export const MANIFEST_V1 = 'application/vnd.docker.distribution.manifest.v1+json';
export const MANIFEST_V1_SIGNED = 'application/vnd.docker.distribution.manifest.v1+prettyjws';
export const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
export const OCI_INDEX = 'application/vnd.oci.image.index.v1+json';
export const IMAGE_CONFIG = 'application/vnd.docker.container.image.v1+json';
export const LAYER_TAR_GZIP = 'application/vnd.docker.image.rootfs.diff.tar.gzip';
export const LAYER_FOREIGN_TAR_GZIP = 'application/vnd.docker.image.rootfs.foreign.diff.tar.gzip';

/** Layer media types a v2s2 manifest may name. */
export const LAYER_TYPES: ReadonlySet<string> = new Set([LAYER_TAR_GZIP, LAYER_FOREIGN_TAR_GZIP]);

/** Human names of refused manifest types, for error messages. */
export const REFUSED_TYPES: Readonly<Record<string, string>> = {
  [OCI_MANIFEST]: 'OCI image manifests',
  [OCI_INDEX]: 'OCI image indexes',
  [MANIFEST_LIST_V2]: 'Docker manifest lists',
  [MANIFEST_V1]: 'Docker schema 1 manifests',
  [MANIFEST_V1_SIGNED]: 'Docker schema 1 manifests',
};
