/** Who a request acts for: a wallet (by signature or its key) or an agent (by its key). */
export type Principal =
  | { readonly kind: "wallet" /** lowercase 0x address */; readonly address: string }
  | { readonly kind: "agent"; readonly ticker: string }
