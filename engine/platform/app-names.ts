/**
 * The platform's answer to "which app holds this name now", for other domains' transactions
 * (engine/registry/rename.ts `AppNameRef`): the address of the name's entry in the app-name
 * index, whose value is the app's id (absent when no app holds the name).
 */
import type { RecordRef } from '../storage/metadata.js';
import { appsByName } from './keyspaces.js';

/** The address of app name `appName`'s entry (value: the holding app's id). */
export function appNameRef(appName: string): RecordRef<string> {
  return [appsByName, appName];
}
