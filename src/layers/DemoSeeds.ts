import type { DemoSeeder } from "../services/platform/DemoData.js"

/** Demo data for `npm start` on an empty data dir. Domains that own lists add a seeder here. */
export const AllDemoSeeders: ReadonlyArray<DemoSeeder> = []
