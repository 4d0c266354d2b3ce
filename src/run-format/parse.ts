// The one-line zod error lives in core (the user-file reader shares it); run files import it here.
export { fieldPath, firstIssue, parseOrThrow } from '../core/zod-issue.js';
