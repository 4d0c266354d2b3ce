import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'runs/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'off',
    },
  },
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly' } },
  },
  {
    // The router is pure: time is passed in, nothing is read from the outside world.
    files: ['src/router/**/*.ts'],
    rules: {
      'no-restricted-globals': ['error', 'setTimeout', 'setInterval', 'process', 'fetch'],
      'no-restricted-imports': ['error', { patterns: ['node:*', 'fs', 'pg', 'dockerode', '../cluster/*', '../workload/*'] }],
      'no-restricted-properties': ['error', { object: 'Date', property: 'now' }, { object: 'Math', property: 'random' }],
    },
  },
  {
    // One concern per file: a source file past 400 lines is split, not stretched.
    files: ['src/**/*.ts'],
    rules: { 'max-lines': ['error', { max: 400 }] },
  },
);
