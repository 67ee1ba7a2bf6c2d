export async function measureSync(): Promise<string> {
  return "";
}
