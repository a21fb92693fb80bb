/**
 * The auth host's HTML error table: engine condition → HTTP status and the heading of the error
 * page (docs/architecture.md "Errors"). Used for failures that escape a page handler
 * (`sendAuthError`) and for the status of a dashboard form refused with a field error. The
 * page's message is the SlipwayError's message.
 */
import { API_ERRORS } from '../api/error-codes.js';
import type { ErrorTable } from '../http/error-table.js';

/** A row of the page table: the status, the page's heading and what the page tells the user. */
export interface PageErrorDescriptor {
  readonly status: number;
  readonly heading: string;
  readonly description: string;
}

const page = (status: number): PageErrorDescriptor =>
  status === 404
    ? { status, heading: 'Not found', description: 'the page or what it names does not exist' }
    : { status, heading: 'Request refused', description: 'the request was understood and refused; the message says why' };

/**
 * Every engine condition → the status and heading of the auth host's error page: the status the
 * Platform API answers for the same condition (one table decides the status of a condition).
 */
export const PAGE_ERRORS = Object.fromEntries(
  Object.entries(API_ERRORS).map(([code, { status }]) => [code, page(status)]),
) as ErrorTable<PageErrorDescriptor>;
