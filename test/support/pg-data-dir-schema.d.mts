export declare const dataDirSchema: (dataDir: string) => string
export declare const urlInSchema: (url: string, schema: string) => string
export declare const adminStatement: (url: string, statement: string) => Promise<void>
export declare const ensureSchema: (url: string, schema: string) => Promise<void>
