/** The request target without the scheme and host a full URL in the request line carries (`POST http://host/api/…`). */
export const originStripped = (url: string): string =>
  url.charCodeAt(0) === 47 ? url : url.replace(/^https?:\/\/[^/]*/, "")
