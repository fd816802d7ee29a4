import { Button, CardActions, CardContent, CircularProgress } from '@mui/material';
import { useState } from 'react';
import { Form, Login, LoginClasses, PasswordInput, required, useLogin, useNotify } from 'react-admin';

/** The login form: one field, the API key (an account's key from registration or the CLI). */
function ApiKeyForm() {
  const login = useLogin();
  const notify = useNotify();
  const [loading, setLoading] = useState(false);
  const submit = (values: Record<string, unknown>) => {
    setLoading(true);
    login({ apiKey: values.apiKey }).catch((error: Error) => {
      setLoading(false);
      notify(error.message, { type: 'error' });
    });
  };
  return (
    <Form onSubmit={submit}>
      <CardContent sx={{ minWidth: 320 }}>
        <PasswordInput source="apiKey" label="API key" validate={required()} autoFocus fullWidth autoComplete="off" />
      </CardContent>
      <CardActions sx={{ px: 2, pb: 2 }}>
        <Button variant="contained" type="submit" color="primary" disabled={loading} fullWidth>
          {loading ? <CircularProgress size={19} thickness={3} /> : 'Sign in'}
        </Button>
      </CardActions>
    </Form>
  );
}

/** react-admin's login screen in API Platform's colours, asking for the API key. */
export function LoginPage() {
  return (
    <Login
      sx={{
        backgroundImage: 'radial-gradient(circle at 50% 14em, #90dfe7 0%, #288690 60%, #288690 100%)',
        [`& .${LoginClasses.icon}`]: { backgroundColor: 'secondary.main' },
      }}
    >
      <ApiKeyForm />
    </Login>
  );
}
