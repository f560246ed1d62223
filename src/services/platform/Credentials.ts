/**
 * The token of an `Authorization: Bearer <token>` header, or undefined. The scheme is matched without
 * regard to case and may be followed by several spaces (RFC 9110 §11.1: auth schemes are
 * case-insensitive), so `bearer abc` and `BEARER  abc` are the same credential as `Bearer abc`.
 */
export const bearerToken = (header: string | undefined): string | undefined =>
  /^bearer +(\S+)$/i.exec(header?.trim() ?? "")?.[1]
