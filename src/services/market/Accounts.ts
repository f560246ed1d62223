/** The platform's own account: where minted coin starts and fees go (a name, not a wallet). */
export const TREASURY = "platform:treasury"
