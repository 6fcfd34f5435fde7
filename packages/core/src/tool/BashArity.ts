/**
 * How many leading tokens name a shell command for "always allow": `git status -s` is
 * `git status`, `npm run build` is `npm run build`, `ls -la` is `ls`. The longest entry of
 * the table that prefixes the tokens decides; an unknown command is its first token.
 */
const ARITY: ReadonlyMap<string, number> = new Map([
  ...[
    "cat", "cd", "chmod", "chown", "cp", "echo", "env", "export", "grep", "kill", "killall", "ln", "ls",
    "mkdir", "mv", "ps", "pwd", "rm", "rmdir", "sleep", "source", "tail", "touch", "unset", "which"
  ].map((name) => [name, 1] as const),
  ...[
    "bazel", "brew", "bun", "cargo", "cdk", "cf", "cmake", "composer", "consul", "crictl", "deno", "docker",
    "eksctl", "firebase", "flyctl", "git", "go", "gradle", "helm", "heroku", "hugo", "ip", "kind", "kubectl",
    "kustomize", "make", "mc", "minikube", "mongosh", "mysql", "mvn", "ng", "npm", "nvm", "nx", "openssl",
    "pip", "pipenv", "pnpm", "poetry", "podman", "psql", "pulumi", "pyenv", "python", "rake", "rbenv",
    "redis-cli", "rustup", "serverless", "skaffold", "sls", "sst", "swift", "systemctl", "terraform", "tmux",
    "turbo", "ufw", "vault", "vercel", "volta", "wp", "yarn"
  ].map((name) => [name, 2] as const),
  ...[
    "aws", "az", "doctl", "gcloud", "gh", "sfdx", "bun run", "bun x", "cargo add", "cargo run", "consul kv",
    "deno task", "docker builder", "docker compose", "docker container", "docker image", "docker network",
    "docker volume", "eksctl create", "git config", "git remote", "git stash", "ip addr", "ip link", "ip netns",
    "ip route", "kind create", "kubectl kustomize", "kubectl rollout", "mc admin", "npm exec", "npm init",
    "npm run", "npm view", "openssl req", "openssl x509", "pnpm dlx", "pnpm exec", "pnpm run",
    "podman container", "podman image", "pulumi stack", "terraform workspace", "vault auth", "vault kv",
    "yarn dlx", "yarn run"
  ].map((name) => [name, 3] as const)
])

const LONGEST_KEY = Math.max(...[...ARITY.keys()].map((key) => key.split(" ").length))

export const prefix = (tokens: ReadonlyArray<string>): ReadonlyArray<string> => {
  if (tokens.length === 0) return []
  for (let length = Math.min(LONGEST_KEY, tokens.length); length > 0; length--) {
    const arity = ARITY.get(tokens.slice(0, length).join(" "))
    if (arity !== undefined) return tokens.slice(0, arity)
  }
  return tokens.slice(0, 1)
}

/** The table itself, for tests and `explain`. */
export const table: ReadonlyMap<string, number> = ARITY
