/**
 * Where blob bytes live: the data directory (`fs`, the embedded default) or an S3-compatible
 * object store (`s3`: AWS S3, Ceph RADOS Gateway, MinIO), from the blob_store and s3.* settings
 * (server/settings/schema.ts); a bad value stops the start with a message naming the setting.
 * Credentials: s3.access_key_id with s3.secret_access_key_file, else the AWS SDK's standard
 * chain (`AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`, `AWS_PROFILE`, instance roles, …).
 */
import type { S3Client, S3ClientConfig } from '@aws-sdk/client-s3';
import { nameOf, readSecretFile, readSettings, type Values } from './settings/load.js';

/** The S3 settings; present only when the blob store is `s3`. */
export interface S3Settings {
  /** Endpoint URL; unset = AWS S3 for `region`. Env SLIPWAY_S3_ENDPOINT. */
  endpoint?: string;
  /** Region (default AWS_REGION, else us-east-1). Env SLIPWAY_S3_REGION. */
  region: string;
  /** Bucket (must exist). Env SLIPWAY_S3_BUCKET. */
  bucket: string;
  /** Key prefix: '' or ending in '/'. Env SLIPWAY_S3_PREFIX. */
  prefix: string;
  /** Path-style addressing (default on with an endpoint, off for AWS). Env SLIPWAY_S3_PATH_STYLE=on|off. */
  pathStyle: boolean;
  /** Bytes per multipart part (≥ 5 MiB; setting in MiB, default 8). Env SLIPWAY_S3_PART_SIZE. */
  partSizeBytes: number;
  /** Parts in flight per upload session (default 4). Env SLIPWAY_S3_UPLOAD_CONCURRENCY. */
  uploadConcurrency: number;
  /**
   * Largest session (bytes) sent as one PutObject instead of a multipart upload (setting in MiB,
   * from the part size to 5120; default part size × upload concurrency). Env SLIPWAY_S3_PUT_LIMIT.
   */
  putLimitBytes: number;
  /** Answer blob GETs with a 307 to a presigned URL (default off). Env SLIPWAY_S3_REDIRECT=on|off. */
  redirect: boolean;
  /** Lifetime of a presigned URL (seconds, 1–604800, default 300). Env SLIPWAY_S3_REDIRECT_EXPIRY. */
  redirectExpirySeconds: number;
  /** Longest wait for one request to the store before it counts as unreachable (seconds, default 10). Env SLIPWAY_S3_TIMEOUT. */
  requestTimeoutSeconds: number;
  /** Static credentials (s3.access_key_id, s3.secret_access_key_file); unset = the AWS SDK's default chain. Never logged. */
  credentials?: { accessKeyId: string; secretAccessKey: string };
}

/** The blob store settings. */
export type BlobStoreSettings = { kind: 'fs' } | ({ kind: 's3' } & S3Settings);

type Source = Record<string, string | undefined>;

const MIB = 1024 * 1024;

/**
 * Reads the blob store settings from `env` alone (and SLIPWAY_CONFIG, if it names a file).
 * @throws what blobStoreFrom throws, and ConfigError for a bad value.
 */
export function loadBlobStoreSettings(env: Source = process.env): BlobStoreSettings {
  return blobStoreFrom(readSettings(env, {}).values, env);
}

/**
 * The blob store settings from the values read (server/settings/load.ts).
 * @param env for the AWS SDK's AWS_REGION, the default region
 * @param force use this store whatever blob_store says; with `fs` the s3.* settings are ignored
 * @throws Error naming the settings: s3.* given without blob_store s3, no bucket, a put limit
 *         below the part size, half of a pair of credentials, an unreadable secret file.
 */
export function blobStoreFrom(values: Values, env: Source, force?: 'fs' | 's3'): BlobStoreSettings {
  const kind = force ?? (values.get('blob_store')?.value as 'fs' | 's3' | undefined) ?? 'fs';
  const given = [...values.keys()].filter((p) => p.startsWith('s3.'));
  if (kind === 'fs') {
    if (given.length > 0 && force === undefined) throw new Error(`${nameOf(values, given[0]!)} is set but ${nameOf(values, 'blob_store')} is not s3`);
    return { kind };
  }
  const get = <T>(path: string, dflt: T): T => (values.has(path) ? values.get(path)!.value as T : dflt);
  const endpoint = get<string | undefined>('s3.endpoint', undefined);
  const bucket = get<string | undefined>('s3.bucket', undefined);
  if (bucket === undefined) throw new Error(`${nameOf(values, 's3.bucket')} is required when ${nameOf(values, 'blob_store')} is s3`);
  const partMiB = get('s3.part_size', 8);
  const uploadConcurrency = get('s3.upload_concurrency', 4);
  const putLimitMiB = get('s3.put_limit', Math.min(5 * 1024, partMiB * uploadConcurrency));
  if (putLimitMiB < partMiB) throw new Error(`${nameOf(values, 's3.put_limit')}: expected a size in MiB from the part size (${partMiB}) to 5120, got ${putLimitMiB}`);
  if (values.has('s3.access_key_id') !== values.has('s3.secret_access_key_file')) {
    throw new Error(`${nameOf(values, 's3.access_key_id')} and ${nameOf(values, 's3.secret_access_key_file')} must be set together`);
  }
  const region = get<string | undefined>('s3.region', undefined) ?? (env.AWS_REGION || undefined) ?? 'us-east-1';
  return {
    kind,
    endpoint,
    region,
    bucket,
    prefix: get('s3.prefix', ''),
    pathStyle: get('s3.path_style', endpoint !== undefined),
    partSizeBytes: partMiB * MIB,
    uploadConcurrency,
    putLimitBytes: putLimitMiB * MIB,
    redirect: get('s3.redirect', false),
    redirectExpirySeconds: get('s3.redirect_expiry', 300),
    requestTimeoutSeconds: get('s3.timeout', 10),
    ...(values.has('s3.access_key_id') ? {
      credentials: { accessKeyId: get('s3.access_key_id', ''), secretAccessKey: readSecretFile(values, 's3.secret_access_key_file') },
    } : {}),
  };
}

/** Slowest transfer to the store (bytes per second) that the total deadline of a request allows for its body. */
export const MIN_STORE_BYTES_PER_SECOND = 1024 * 1024;

/** Attempts per request to the store (the SDK's `maxAttempts`: one retry after a failure). */
export const S3_ATTEMPTS = 2;

/**
 * The S3 client settings for `s`: endpoint, region, addressing, and the deadlines of every
 * request (docs/faults.md), so that an unreachable or stalled store fails a request instead of
 * hanging it. Per attempt: the connection within min(`requestTimeoutSeconds`, 5 s); no byte
 * moving either way for `requestTimeoutSeconds` (the socket's idle timeout); the answer's head
 * within `requestTimeoutSeconds` plus the time a part takes at `MIN_STORE_BYTES_PER_SECOND`
 * (the SDK's `requestTimeout`, which only logs a warning unless `throwOnRequestTimeout`).
 * `S3_ATTEMPTS` attempts. Credentials: s3.access_key_id and its secret file when set, else the SDK's default chain.
 */
export function s3ClientSettings(s: S3Settings): S3ClientConfig {
  const ms = s.requestTimeoutSeconds * 1000;
  return {
    region: s.region,
    forcePathStyle: s.pathStyle,
    ...(s.endpoint === undefined ? {} : { endpoint: s.endpoint }),
    ...(s.credentials === undefined ? {} : { credentials: s.credentials }),
    requestHandler: {
      connectionTimeout: Math.min(ms, 5000),
      socketTimeout: ms,
      requestTimeout: ms + Math.ceil((s.partSizeBytes / MIN_STORE_BYTES_PER_SECOND) * 1000),
      throwOnRequestTimeout: true,
    },
    maxAttempts: S3_ATTEMPTS,
  };
}

/**
 * Checks at start that the bucket answers (HeadBucket) within the request timeout.
 * @throws Error naming the settings to check (endpoint, bucket, credentials) and the store's answer.
 */
export async function probeBucket(client: S3Client, s: S3Settings): Promise<void> {
  // The SDK loads only for an S3 store (about 17 MiB of RSS a filesystem node does not pay).
  const { HeadBucketCommand } = await import('@aws-sdk/client-s3');
  try {
    await client.send(new HeadBucketCommand({ Bucket: s.bucket }), { abortSignal: AbortSignal.timeout(s.requestTimeoutSeconds * 1000) });
  } catch (e) {
    const status = (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    const where = s.endpoint ?? `AWS S3 (${s.region})`;
    if (status === 404) throw new Error(`SLIPWAY_S3_BUCKET: bucket "${s.bucket}" does not exist at ${where} (\`slipway s3 create-bucket\` creates it)`);
    if (status === 403 || status === 401) throw new Error(`SLIPWAY_S3_BUCKET: access to bucket "${s.bucket}" at ${where} refused (${status}); check the credentials (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE)`);
    throw new Error(`SLIPWAY_S3_ENDPOINT: the object store at ${where} did not answer for bucket "${s.bucket}": ${(e as Error).name}: ${(e as Error).message}`);
  }
}
