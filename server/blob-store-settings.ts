/**
 * Where blob bytes live: the data directory (`fs`, the embedded default) or an S3-compatible
 * object store (`s3`: AWS S3, Ceph RADOS Gateway, MinIO). Read from the environment; a bad value
 * stops the start with a message naming the setting (docs/architecture.md, configuration).
 * Credentials are not settings of Slipway: the AWS SDK's standard chain supplies them
 * (`AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`, `AWS_PROFILE`, instance roles, …).
 */
import type { S3Client, S3ClientConfig } from '@aws-sdk/client-s3';
import { parseSwitch } from './config.js';

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
}

/** The blob store settings. */
export type BlobStoreSettings = { kind: 'fs' } | ({ kind: 's3' } & S3Settings);

type Source = Record<string, string | undefined>;

const MIB = 1024 * 1024;

/**
 * Reads the blob store settings from `env`.
 * @throws Error naming the environment variable and the bad value.
 */
export function loadBlobStoreSettings(env: Source = process.env): BlobStoreSettings {
  const get = (name: string) => (env[name] === '' ? undefined : env[name]);
  const kind = get('SLIPWAY_BLOB_STORE') ?? 'fs';
  if (kind !== 'fs' && kind !== 's3') throw new Error(`environment variable SLIPWAY_BLOB_STORE: "${kind}" must be fs or s3`);
  if (kind === 'fs') {
    const stray = Object.keys(env).find((k) => k.startsWith('SLIPWAY_S3_') && env[k] !== '' && env[k] !== undefined);
    if (stray) throw new Error(`environment variable ${stray} is set but SLIPWAY_BLOB_STORE is not s3`);
    return { kind };
  }
  const bad = (name: string, raw: string, what: string) => new Error(`environment variable ${name}: "${raw}" ${what}`);
  const int = (name: string, dflt: number, min: number, max: number, what: string) => {
    const raw = get(name);
    if (raw === undefined) return dflt;
    const n = Number(raw);
    if (!/^\d+$/.test(raw) || n < min || n > max) throw bad(name, raw, what);
    return n;
  };
  const flag = (name: string, dflt: boolean) => {
    const raw = get(name);
    return raw === undefined ? dflt : parseSwitch(raw, `environment variable ${name}`);
  };
  const endpoint = get('SLIPWAY_S3_ENDPOINT');
  if (endpoint !== undefined) {
    let u: URL | undefined;
    try {
      u = new URL(endpoint);
    } catch {
      u = undefined;
    }
    if (!u || (u.protocol !== 'http:' && u.protocol !== 'https:')) throw bad('SLIPWAY_S3_ENDPOINT', endpoint, 'is not an http or https URL');
  }
  const bucket = get('SLIPWAY_S3_BUCKET');
  if (bucket === undefined) throw new Error('environment variable SLIPWAY_S3_BUCKET is required when SLIPWAY_BLOB_STORE=s3');
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) throw bad('SLIPWAY_S3_BUCKET', bucket, 'is not a valid bucket name (3–63 lower-case letters, digits, dots, hyphens)');
  const prefix = get('SLIPWAY_S3_PREFIX') ?? '';
  if (prefix !== '' && (!prefix.endsWith('/') || prefix.startsWith('/') || prefix.length > 200 || /[\x00-\x1f\\]/.test(prefix))) {
    throw bad('SLIPWAY_S3_PREFIX', prefix, "must be empty or a relative key prefix ending in '/' (at most 200 characters)");
  }
  const region = get('SLIPWAY_S3_REGION') ?? get('AWS_REGION') ?? 'us-east-1';
  if (!/^[a-z0-9-]{1,32}$/.test(region)) throw bad('SLIPWAY_S3_REGION', region, 'is not a region name');
  const partSizeBytes = int('SLIPWAY_S3_PART_SIZE', 8, 5, 5 * 1024, 'is not a part size in MiB (5–5120)') * MIB;
  const uploadConcurrency = int('SLIPWAY_S3_UPLOAD_CONCURRENCY', 4, 1, 64, 'is not a number of parts in flight (1–64)');
  const putLimitBytes = int('SLIPWAY_S3_PUT_LIMIT', Math.min(5 * 1024, (partSizeBytes / MIB) * uploadConcurrency), partSizeBytes / MIB, 5 * 1024,
    `is not a size in MiB from the part size (${partSizeBytes / MIB}) to 5120`) * MIB;
  return {
    kind,
    endpoint,
    region,
    bucket,
    prefix,
    pathStyle: flag('SLIPWAY_S3_PATH_STYLE', endpoint !== undefined),
    partSizeBytes,
    uploadConcurrency,
    putLimitBytes,
    redirect: flag('SLIPWAY_S3_REDIRECT', false),
    redirectExpirySeconds: int('SLIPWAY_S3_REDIRECT_EXPIRY', 300, 1, 604800, 'is not a number of seconds (1–604800, S3\'s longest presigned URL)'),
    requestTimeoutSeconds: int('SLIPWAY_S3_TIMEOUT', 10, 1, 600, 'is not a number of seconds (1–600)'),
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
 * `S3_ATTEMPTS` attempts. Credentials come from the SDK's default chain.
 */
export function s3ClientSettings(s: S3Settings): S3ClientConfig {
  const ms = s.requestTimeoutSeconds * 1000;
  return {
    region: s.region,
    forcePathStyle: s.pathStyle,
    ...(s.endpoint === undefined ? {} : { endpoint: s.endpoint }),
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
    if (status === 404) throw new Error(`SLIPWAY_S3_BUCKET: bucket "${s.bucket}" does not exist at ${where}`);
    if (status === 403 || status === 401) throw new Error(`SLIPWAY_S3_BUCKET: access to bucket "${s.bucket}" at ${where} refused (${status}); check the credentials (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE)`);
    throw new Error(`SLIPWAY_S3_ENDPOINT: the object store at ${where} did not answer for bucket "${s.bucket}": ${(e as Error).name}: ${(e as Error).message}`);
  }
}
